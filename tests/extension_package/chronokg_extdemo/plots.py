"""A plot of `extdemo.accuracy` (registered when chronokg reads `chronokg.plots`)."""

from __future__ import annotations

from collections.abc import Sequence

from chronokg.reports.plots import Omitted, Plot, figure, plot
from chronokg.reports.series import Series


@plot("extdemo.accuracy")
def accuracy(series: Sequence[Series]) -> list[Plot | Omitted]:
    shown = [(s, v.value) for s in series if (v := s.get("extdemo.accuracy")) is not None and v.value is not None]
    if not shown:
        return [Omitted("extdemo_accuracy", "no extdemo answers in these runs")]
    fig = figure(4, 3)
    ax = fig.add_subplot()
    ax.bar([s.short_label or s.label for s, _ in shown], [v for _, v in shown])
    return [Plot("extdemo_accuracy", "extdemo accuracy", "Share of extdemo answers that are right.", fig)]
