"""The HTML of `pettingllms view` (`pettingllms.presentation.viewer`): `render_page(data)` embeds the data as JSON and
draws everything in the browser with a small inline script (no library, no network).

The script only ever writes data through `textContent` (never as HTML), so a completion that holds markup shows as
text. It reads its filters from the address (`#step=3&agent=plan&instance=2&success=solved`, or `env`,
`success` and `open`, an episode key to show unfolded, for an evaluation) and writes them back on every change, so a view can be linked. When it has drawn,
`document.body.dataset` holds `ready` ("1"), `renderMs` (milliseconds from the script's start to the end of the
first drawing) and `shown` (candidates or episodes on screen): what the browser test and the benchmark read.
"""

from __future__ import annotations

import json
import math
from typing import Any

NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}
"""How a non-finite number is written into the page's data (NaN as "NaN"): JSON has no such numbers, and
`JSON.parse` rejects the `NaN` that `json.dumps` writes."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.4em; } h3 { font-size: 1em; margin: 0.8em 0 0.3em; }
table { border-collapse: collapse; margin: 0.3em 0 0.8em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; text-align: right; }
td.text { text-align: left; }
pre { white-space: pre-wrap; margin: 0; max-width: 70em; font-size: 0.85em; }
tr.committed { background: #e6f4e6; }
.tag { font-weight: bold; color: #1a7f1a; }
.bad { color: #b00020; }
.good { color: #1a7f1a; }
.filters label { margin-right: 1em; }
.group { border-left: 3px solid #4C72B0; padding-left: 0.7em; margin: 0.6em 0; }
.instance { border: 1px solid #ddd; padding: 0.3em 0.8em; margin: 0.8em 0; }
svg { border: 1px solid #ddd; background: #fff; margin-right: 1em; }
.note { color: #555; font-style: italic; }
"""

SCRIPT = r"""
const T0 = performance.now();
const DATA = JSON.parse(document.getElementById("data").textContent);
const $ = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value; else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.appendChild(child);
  return node;
};
const PROGRAM_MARKS = {  // a tool candidate's program (Sample.program); a direct answer ("absent") gets no mark
  solves: {class: "program good", text: "program: its proposal solves the instance"},
  fails: {class: "program bad", text: "program: its proposal does not solve the instance"},
};
// a number, or a non-finite one as the data holds it ("NaN", "Infinity", "-Infinity": `render_page`)
const fmt = (x, digits = 3) => (x === null || x === undefined) ? "" :
  (typeof x === "string" ? x : Number(x).toFixed(digits));
const finite = (x) => typeof x === "number" && Number.isFinite(x);
const readHash = () => Object.fromEntries(new URLSearchParams(location.hash.slice(1)));
const writeHash = (state) => {
  const shown = Object.entries(state).filter(([, v]) => v !== "" && v !== "all");
  history.replaceState(null, "", "#" + new URLSearchParams(shown).toString());
};
function select(name, options, value, onChange) {
  const node = $("select", {id: "filter-" + name});
  for (const [optionValue, label] of options) node.appendChild($("option", {value: optionValue, text: label}));
  if (!options.length) node.disabled = true;  // nothing to choose: a run without dumps, a result without envs
  else node.value = options.some(([v]) => String(v) === String(value)) ? value : options[0][0];
  node.addEventListener("change", onChange);
  return $("label", {text: name + " "}, node);
}
function promptBlock(index) {
  return $("details", {}, $("summary", {text: "prompt"}), $("pre", {text: DATA.prompts[index]}));
}
function settingsTable(settings) {
  const table = $("table", {id: "settings"});
  for (const [key, value] of Object.entries(settings)) {
    table.appendChild($("tr", {}, $("th", {text: key}), $("td", {class: "text", text: JSON.stringify(value)})));
  }
  return table;
}
function chart(title, series, yRange) {
  const width = 420, height = 220, pad = 36;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", width); svg.setAttribute("height", height);
  const dropped = series.reduce((n, s) => n + s.points.filter((p) => !finite(p[0]) || !finite(p[1])).length, 0);
  series = series.map((s) => ({...s, points: s.points.filter((p) => finite(p[0]) && finite(p[1]))}));
  const all = series.flatMap((s) => s.points);
  if (!all.length && !dropped) return null;
  const xs = all.length ? all.map((p) => p[0]) : [0], ys = all.length ? all.map((p) => p[1]) : [0];
  const [x0, x1] = [Math.min(...xs), Math.max(...xs, Math.min(...xs) + 1)];
  const [y0, y1] = yRange || [Math.min(...ys, 0), Math.max(...ys, 0) + 1e-9];
  const X = (x) => pad + (width - 2 * pad) * (x - x0) / (x1 - x0);
  const Y = (y) => height - pad - (height - 2 * pad) * (y - y0) / (y1 - y0);
  const add = (tag, attrs, text) => {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    svg.appendChild(node);
  };
  add("text", {x: pad, y: 16, "font-size": 12},
      title + (dropped ? " (" + dropped + " non-finite points not drawn)" : ""));
  add("line", {x1: pad, y1: Y(y0), x2: width - pad, y2: Y(y0), stroke: "#999"});
  add("text", {x: 2, y: Y(y1) + 4, "font-size": 10}, fmt(y1, 2));
  add("text", {x: 2, y: Y(y0) + 4, "font-size": 10}, fmt(y0, 2));
  add("text", {x: width - pad, y: height - 8, "font-size": 10, "text-anchor": "end"}, "step " + x1);
  const colours = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"];
  series.forEach((s, i) => {
    const colour = colours[i % colours.length];
    if (s.line && s.points.length > 1) {
      add("polyline", {fill: "none", stroke: colour, "stroke-width": 1.5,
                       points: s.points.map((p) => X(p[0]) + "," + Y(p[1])).join(" ")});
    }
    if (s.markers) for (const p of s.points) add("circle", {cx: X(p[0]), cy: Y(p[1]), r: 3, fill: colour});
    add("text", {x: pad + 4, y: 30 + 12 * i, "font-size": 10, fill: colour}, s.label);
  });
  return svg;
}
function curves() {
  const rows = DATA.metrics;
  const points = (key) => rows.filter((r) => key in r).map((r) => [r.step, r[key]]);
  const success = [
    {label: "training: committed best-of-K episodes", points: points("train/success_rate"), line: true},
    {label: "evaluation: greedy", points: points("eval/success_rate"), markers: true,
     line: points("eval/success_rate").length > 2},
  ];
  const agents = [...new Set(rows.flatMap((r) => Object.keys(r)).filter((k) => k.startsWith("train/reward/")))];
  const rewards = agents.sort().map((k) => ({label: k.slice(13), points: points(k), line: true}));
  return $("div", {id: "curves"}, chart("success rate", success, [0, 1]), chart("mean training reward", rewards));
}
function runView() {
  const root = document.getElementById("view");
  const state = Object.assign({step: "", agent: "all", instance: "all", success: "all"}, readHash());
  const steps = DATA.steps.map((s) => s.step);
  if (!steps.includes(Number(state.step))) state.step = steps.length ? steps[steps.length - 1] : "";
  const body = $("div", {id: "tree"});
  const filters = $("div", {class: "filters"});
  function draw() {
    writeHash(state);
    body.replaceChildren();
    const step = DATA.steps.find((s) => s.step === Number(state.step));
    let shown = 0;
    if (!step) { document.body.dataset.shown = "0"; return; }
    const instances = [...new Set(step.samples.map((s) => s.instance))].sort((a, b) => a - b);
    for (const instance of instances) {
      if (state.instance !== "all" && String(instance) !== String(state.instance)) continue;
      const samples = step.samples.filter((s) => s.instance === instance);
      const committed = samples.filter((s) => s.committed);
      const solved = committed.some((s) => s.success === true);
      if (state.success === "solved" && !solved) continue;
      if (state.success === "unsolved" && solved) continue;
      const box = $("div", {class: "instance", "data-instance": instance},
                    $("h3", {text: "instance " + instance + (solved ? " (solved)" : " (not solved)")}));
      const keys = [];
      for (const s of samples) {
        const key = s.turn + "/" + s.agent;
        if (!keys.includes(key)) keys.push(key);
      }
      for (const key of keys) {
        const [turn, agent] = [Number(key.split("/")[0]), key.slice(key.indexOf("/") + 1)];
        if (state.agent !== "all" && agent !== state.agent) continue;
        const members = samples.filter((s) => s.turn === turn && s.agent === agent);
        const group = $("div", {class: "group", "data-turn": turn, "data-agent": agent});
        const stats = members[0].group_stats;
        group.appendChild($("div", {class: "group-header", text:
          "turn " + (turn + 1) + " · " + agent + " · group " + members[0].group + ": n=" + stats.n +
          ", mean reward " + fmt(stats.mean) + ", std " + fmt(stats.std)}));
        const prompts = [...new Set(members.map((s) => s.prompt))];
        for (const index of prompts) group.appendChild(promptBlock(index));
        const table = $("table", {class: "candidates"}, $("tr", {},
          ...["", "episode", "reward", "reward_team", "reward_local", "advantage", "completion"].map(
            (h) => $("th", {text: h}))));
        members.forEach((s) => {
          shown += 1;
          const row = $("tr", {class: s.committed ? "committed candidate" : "candidate"},
            $("td", {class: "tag", text: s.committed ? "committed" : ""}),
            $("td", {text: s.episode === null || s.episode === undefined ? "" : String(s.episode)}),
            $("td", {text: fmt(s.reward)}), $("td", {text: fmt(s.reward_team)}), $("td", {text: fmt(s.reward_local)}),
            $("td", {text: fmt(s.advantage)}),
            $("td", {class: "text"}, $("pre", {text: s.completion}),
              PROGRAM_MARKS[s.program] ? $("div", PROGRAM_MARKS[s.program]) : null,
              s.error ? $("div", {class: "bad", text: "error: " + s.error}) : null));
          table.appendChild(row);
        });
        group.appendChild(table);
        box.appendChild(group);
      }
      body.appendChild(box);
    }
    document.body.dataset.shown = String(shown);
  }
  const onChange = (name) => (event) => { state[name] = event.target.value; draw(); };
  const agents = [...new Set(DATA.steps.flatMap((s) => s.samples.map((x) => x.agent)))];
  const instances = [...new Set(DATA.steps.flatMap((s) => s.samples.map((x) => x.instance)))].sort((a, b) => a - b);
  filters.append(
    select("step", steps.map((s) => [s, "step " + s]), state.step, onChange("step")),
    select("agent", [["all", "all"], ...agents.map((a) => [a, a])], state.agent, onChange("agent")),
    select("instance", [["all", "all"], ...instances.map((i) => [i, String(i)])], state.instance, onChange("instance")),
    select("success", [["all", "all"], ["solved", "solved"], ["unsolved", "not solved"]], state.success,
           onChange("success")));
  root.append(curves(), filters, body);
  draw();
}
function evalView() {
  const root = document.getElementById("view");
  const state = Object.assign({env: DATA.envs.length ? DATA.envs[0].env : "", success: "all", open: ""},
                              readHash());
  const body = $("div", {id: "episodes"});
  function draw() {
    writeHash(state);
    body.replaceChildren();
    const env = DATA.envs.find((e) => e.env === state.env) || DATA.envs[0];
    let shown = 0;
    if (env) {
      const s = env.summary;
      body.appendChild($("p", {id: "summary", text: env.env + ": success " + fmt(s.success_rate) + " [" +
        fmt(s.ci95 && s.ci95[0]) + ", " + fmt(s.ci95 && s.ci95[1]) + "] over " + s.episodes + " episodes"}));
      if (env.note) body.appendChild($("p", {class: "note", text: env.note}));
      for (const episode of env.episodes) {
        if (state.success === "solved" && !episode.success) continue;
        if (state.success === "unsolved" && episode.success) continue;
        shown += 1;
        const box = $("details", {class: "episode", "data-key": episode.key},
          $("summary", {text: episode.key + (episode.success ? " (solved)" : " (not solved)")}));
        if (state.open === episode.key) box.open = true;
        for (const step of episode.steps) {
          box.appendChild($("div", {class: "group"},
            $("div", {text: "turn " + (step.turn + 1) + " · " + step.agent + " · reward " + fmt(step.reward) +
              " (team " + fmt(step.reward_team) + ", local " + fmt(step.reward_local) + ")"}),
            promptBlock(step.prompt), $("pre", {text: step.completion}),
            step.error ? $("div", {class: "bad", text: "error: " + step.error}) : null));
        }
        body.appendChild(box);
      }
    }
    document.body.dataset.shown = String(shown);
  }
  const onChange = (name) => (event) => { state[name] = event.target.value; draw(); };
  root.append($("div", {class: "filters"},
    select("env", DATA.envs.map((e) => [e.env, e.env]), state.env, onChange("env")),
    select("success", [["all", "all"], ["solved", "solved"], ["unsolved", "not solved"]], state.success,
           onChange("success"))), body);
  draw();
}
document.getElementById("title").textContent = DATA.title;
document.getElementById("header").appendChild(settingsTable(DATA.settings));
if (DATA.note) document.getElementById("header").appendChild($("p", {class: "note", text: DATA.note}));
(DATA.kind === "run" ? runView : evalView)();
document.body.dataset.renderMs = String(Math.round(performance.now() - T0));
document.body.dataset.ready = "1";
"""


def render_page(data: dict[str, Any]) -> str:
    """The page of `data` (`pettingllms.presentation.viewer.run_data` or `eval_data`), as one HTML document."""
    embedded = embed_json(data)
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>PettingLLMs view</title>
<style>{STYLE}</style>
</head>
<body>
<h1 id="title"></h1>
<div id="header"></div>
<div id="view"></div>
<script type="application/json" id="data">{embedded}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


def embed_json(data: Any) -> str:
    """`data` as JSON that can sit inside a `<script type="application/json">` block and parse back whole.

    Every `<`, `>` and `&` is written as a `\\u` escape (the same string to `JSON.parse`), so no text in the data
    (`</script>`, `<!--` followed anywhere later by `<script`) can end the block or send the HTML parser into the
    script-escaped states that swallow the page's own script; U+2028 and U+2029 are escaped too (`ensure_ascii`).
    A non-finite float becomes the string "NaN", "Infinity" or "-Infinity", which the page prints as such.

    >>> embed_json({"text": "<!--<script>", "x": float("nan")})
    '{"text": "\\\\u003c!--\\\\u003cscript\\\\u003e", "x": "NaN"}'
    """
    text = json.dumps(_finite(data), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by its name (`NON_FINITE`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else NON_FINITE[value]
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value
