/** The console's style sheet (served as `console.css`; colours meet WCAG AA contrast). */
export const CONSOLE_STYLES: string = `
*, *::before, *::after { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; background: #f6f8fa; }
a { color: #0b5cad; }
.skip { position: absolute; left: -10000px; top: 0; }
.skip:focus { left: 8px; top: 8px; background: #fff; padding: 6px 10px; z-index: 10; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: 12px 24px; padding: 12px 20px; background: #fff; border-bottom: 1px solid #d0d7de; }
.top h1 { font-size: 20px; margin: 0; }
.top nav a { margin-right: 10px; }
.controls { display: flex; align-items: center; gap: 12px; margin-left: auto; }
.muted { color: #57606a; }
.status { margin: 0; padding: 0 20px; min-height: 1.6em; font-weight: 600; }
.status.error { color: #8a1c12; }
main { padding: 8px 20px 40px; max-width: 1400px; }
section { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 12px 18px 18px; margin: 16px 0; }
section section { border-color: #8c959f; margin: 12px 0 0; }
h2 { font-size: 18px; margin: 4px 0 12px; }
h3 { font-size: 15px; margin: 18px 0 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 0; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 16px; min-width: 150px; }
.card dt { color: #57606a; font-size: 13px; }
.card dd { margin: 0; font-size: 24px; font-weight: 600; font-variant-numeric: tabular-nums; }
.chart svg { display: block; max-width: 720px; width: 100%; height: auto; }
.chart .bar { fill: #0b5cad; }
.chart .axis { stroke: #57606a; stroke-width: 1; }
.chart text { fill: #3d444d; font-size: 11px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #d8dee4; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num { font-variant-numeric: tabular-nums; }
td.error { color: #8a1c12; max-width: 420px; overflow-wrap: anywhere; }
td.nowrap { white-space: nowrap; }
td.empty { color: #57606a; font-style: italic; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px; overflow: auto; max-height: 420px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; }
.badge.pending, .badge.retrying { background: #fff4d6; color: #6b3f00; }
.badge.sent, .badge.processed, .badge.completed { background: #e3f5ea; color: #0f5b2e; }
.badge.dead, .badge.failed { background: #fde8e6; color: #8a1c12; }
.badge.started { background: #e7f0fb; color: #0b4a8c; }
button { font: inherit; padding: 5px 12px; border-radius: 6px; border: 1px solid #0b5cad; background: #0b5cad; color: #fff; cursor: pointer; }
button:hover { background: #094c8f; }
button.link { background: none; border: none; color: #0b5cad; padding: 0; text-decoration: underline; text-align: left; overflow-wrap: anywhere; }
button.danger { background: #b42318; border-color: #b42318; }
button.danger:hover { background: #911b13; }
button:disabled { background: #eaeef2; border-color: #d0d7de; color: #57606a; cursor: default; }
button + button { margin-left: 6px; }
:focus-visible { outline: 3px solid #1f6feb; outline-offset: 2px; }
select, input { font: inherit; padding: 4px 6px; border: 1px solid #6e7781; border-radius: 6px; background: #fff; color: #1b1f24; }
.filters { display: flex; align-items: center; gap: 8px; margin: 8px 0; }
.actions { margin: 0 0 10px; }
.key-form .grid { display: grid; grid-template-columns: max-content minmax(200px, 480px); gap: 6px 12px; align-items: center; margin: 8px 0 12px; }
.record { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
.record dt { color: #57606a; }
.record dd { margin: 0; }
#dead-filter { margin: 0 0 14px; }
h4 { font-size: 14px; margin: 12px 0 6px; }
`;
