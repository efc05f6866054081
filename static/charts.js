// Charts in the page's theme. ECharts colours its text and lines itself (grey on grey on a dark card), so
// each chart gets colours that contrast with the card behind it, light or dark: when it is first drawn
// and again whenever the theme changes (Quasar's `body--dark` class). `rostrumCharts.watch(id)` is
// called by the server for each chart it makes (`webapp/ui/components/charts.py`).
(() => {
  const INK = {
    // text on white / on the dark card (#1d1d1d): 10.3:1 and 11.5:1; lines quiet but visible
    light: { text: "#334155", axis: "#64748b", line: "#e2e8f0",
             palette: ["#2563eb", "#16a34a", "#dc2626", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4d7c0f"] },
    dark: { text: "#cbd5e1", axis: "#94a3b8", line: "#3f3f46",
            palette: ["#60a5fa", "#4ade80", "#f87171", "#fbbf24", "#a78bfa", "#22d3ee", "#f472b6", "#a3e635"] },
  };
  const charts = new Set();
  const isDark = () => document.body.classList.contains("body--dark");

  function paint(chart) {
    if (chart.isDisposed()) {
      charts.delete(chart);
      return;
    }
    const ink = isDark() ? INK.dark : INK.light;
    const option = chart.getOption();
    const axes = (list) => (list || []).map(() => ({
      axisLabel: { color: ink.text }, nameTextStyle: { color: ink.text },
      axisLine: { lineStyle: { color: ink.axis } }, axisTick: { lineStyle: { color: ink.axis } },
      splitLine: { lineStyle: { color: ink.line } },
    }));
    chart.setOption({
      color: ink.palette,
      textStyle: { color: ink.text },
      legend: (option.legend || []).map(() => ({
        textStyle: { color: ink.text }, inactiveColor: ink.axis, pageTextStyle: { color: ink.text },
        pageIconColor: ink.text, pageIconInactiveColor: ink.axis,
      })),
      xAxis: axes(option.xAxis),
      yAxis: axes(option.yAxis),
    });
  }

  window.rostrumCharts = {
    // Paint chart element `id` once it exists (its component mounts a moment after the server asks).
    watch(id, tries = 0) {
      const chart = window.getElement?.(id)?.chart;
      if (!chart) {
        if (tries < 500) setTimeout(() => window.rostrumCharts.watch(id, tries + 1), 20);
        return;
      }
      charts.add(chart);
      paint(chart);
    },
    paintAll() {
      for (const chart of [...charts]) paint(chart);
    },
  };
  const observe = () => new MutationObserver(() => window.rostrumCharts.paintAll())
    .observe(document.body, { attributes: true, attributeFilter: ["class"] });
  if (document.body) observe();
  else document.addEventListener("DOMContentLoaded", observe);
})();
