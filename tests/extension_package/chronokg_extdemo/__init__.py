"""chronokg-extdemo: one extension of each kind, found by chronokg through entry points alone."""
