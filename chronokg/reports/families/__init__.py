"""Each family's plots, one module per family, one `@plot("metric.name")` function per metric (see
docs/reports.md). Modules here are imported by `chronokg.reports.plots.all_plots`; they import matplotlib only
inside their functions."""
