"""One evaluation profile per benchmark family (see `chronokg.eval.profile`)."""
