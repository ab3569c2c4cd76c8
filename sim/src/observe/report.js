// `sim report`'s interactive views of the SM chosen: the timeline (zoom, pan, hover), one
// mainloop iteration of each warpgroup, and the units' small multiples, which share the
// timeline's cycle range. DATA is the page's (observe/timeline.rs). Everything is drawn
// synchronously, so a headless browser's DOM shows the result of each interaction.
window.onerror = function (m) { document.body.setAttribute('data-error', String(m)); };
(function () {
  'use strict';
  const D = DATA;
  const W = 1200, LABEL = 200, PLOT = W - LABEL - 10, AXIS = 22, MIN_SPAN = 16;
  const NSTATE = D.colors.length;
  const GEMM = ['#1565c0', '#64b5f6', '#0d47a1', '#90caf9'];
  const canvas = document.getElementById('timeline');
  const g = canvas.getContext('2d');
  const tip = document.getElementById('tip');
  const chooser = document.getElementById('sm');
  let cur = null, view = [0, D.end], drag = null, unitSeries = [];

  const grouped = function (n) {
    return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  };
  const esc = function (s) {
    return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
  };

  // A row's slices as arrays (the page stores gaps, durations, names and states flat).
  function decode(row) {
    const s = row.s, start = [], end = [], name = [], off = [0], st = [];
    let at = 0;
    for (let i = 0; i < s.length;) {
      const a = at + s[i], d = s[i + 1], k = s[i + 3];
      start.push(a); end.push(a + d); name.push(s[i + 2]);
      i += 4;
      if (k >= 0) st.push(k, d);
      else for (let q = 0; q < -k; q++, i += 2) st.push(s[i], s[i + 1]);
      off.push(st.length / 2);
      at = a + d;
    }
    return { label: row.label, warps: row.warps, start: start, end: end, name: name, off: off, st: st };
  }
  function rowsOf(sm) {
    if (!sm.decoded) sm.decoded = sm.rows.map(decode);
    return sm.decoded;
  }
  // The first slice ending after cycle t.
  function first(r, t) {
    let lo = 0, hi = r.end.length;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (r.end[m] > t) hi = m; else lo = m + 1;
    }
    return lo;
  }
  // One buffer for every row, reused across redraws (a pan redraws at each mouse move).
  let acc = new Float64Array(0);
  // Per pixel column of [v0, v1) drawn over `width` px, the state holding most warp-cycles
  // there (-1: none): merged slices count each state's exact cycles.
  function columns(r, v0, v1, width) {
    if (acc.length < width * NSTATE) acc = new Float64Array(width * NSTATE);
    acc.fill(0, 0, width * NSTATE);
    const k = width / (v1 - v0);
    for (let i = first(r, v0); i < r.start.length && r.start[i] < v1; i++) {
      const x0 = Math.max(0, (r.start[i] - v0) * k), x1 = Math.min(width, (r.end[i] - v0) * k);
      const dur = Math.max(1, r.end[i] - r.start[i]);
      for (let px = Math.floor(x0); px < x1; px++) {
        const cover = Math.min(x1, px + 1) - Math.max(x0, px);
        for (let q = r.off[i]; q < r.off[i + 1]; q++) {
          acc[px * NSTATE + r.st[2 * q]] += cover * r.st[2 * q + 1] / dur;
        }
      }
    }
    const out = new Int8Array(width).fill(-1);
    for (let px = 0; px < width; px++) {
      let best = 0;
      for (let s = 0; s < NSTATE; s++) {
        if (acc[px * NSTATE + s] > best) { best = acc[px * NSTATE + s]; out[px] = s; }
      }
    }
    return out;
  }
  // Runs of equal columns: [from, to, state].
  function runs(cols) {
    const out = [];
    for (let a = 0; a < cols.length;) {
      let b = a + 1;
      while (b < cols.length && cols[b] === cols[a]) b++;
      if (cols[a] >= 0) out.push([a, b, cols[a]]);
      a = b;
    }
    return out;
  }
  function ticks(v0, v1, px) {
    const raw = (v1 - v0) / Math.max(1, px / 110), p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(function (m) { return m * p; }).find(function (s) { return s >= raw; });
    const out = [];
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) out.push(t);
    return out;
  }
  // The tooltip of row r's slice at cycle t, null if none; `perPx`: cycles a pixel covers.
  function sliceTip(r, t, perPx) {
    const i = first(r, t);
    if (i >= r.start.length || r.start[i] > t) return null;
    let w = r.warps[0];
    for (const x of r.warps) if (x[1] <= i) w = x;
    const lines = [D.strings[w[0]]].concat(D.strings[r.name[i]].split('\n'));
    const pairs = [];
    for (let q = r.off[i]; q < r.off[i + 1]; q++) pairs.push([r.st[2 * q], r.st[2 * q + 1]]);
    if (pairs.length === 1) lines.push('state ' + D.names[pairs[0][0]] + ' [' + D.ncu[pairs[0][0]] + ']');
    else {
      pairs.sort(function (a, b) { return b[1] - a[1] || a[0] - b[0]; });
      lines.push('states ' + pairs.map(function (p) { return D.names[p[0]] + ' ' + grouped(p[1]); }).join(', '));
    }
    const dur = r.end[i] - r.start[i];
    lines.push('start ' + grouped(r.start[i]) + ' · ' + grouped(dur) + ' cycles');
    if (dur < perPx) lines.push('(1 px = ' + grouped(perPx) + ' cycles: zoom in for single slices)');
    return lines.join('\n');
  }
  function showTip(text, e) {
    if (text === null) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = (e.clientX + 14) + 'px';
    tip.style.top = (e.clientY + 14) + 'px';
  }

  // The timeline.
  function rowHeight(n) { return n > 40 ? 10 : 14; }
  function cycleAt(x) { return view[0] + (x - LABEL) / PLOT * (view[1] - view[0]); }
  function xOf(t) { return LABEL + (t - view[0]) / (view[1] - view[0]) * PLOT; }
  function drawTimeline() {
    const rows = rowsOf(cur), rh = rowHeight(rows.length);
    const h = AXIS + Math.max(rows.length, 1) * rh + 4, dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = h * dpr;
    canvas.style.width = W + 'px'; canvas.style.height = h + 'px';
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, h);
    g.font = '11px sans-serif';
    g.textBaseline = 'middle';
    for (const t of ticks(view[0], view[1], PLOT)) {
      const x = xOf(t);
      g.fillStyle = '#eee'; g.fillRect(x, AXIS - 4, 1, h - AXIS + 4);
      g.fillStyle = '#666'; g.textAlign = 'center'; g.fillText(grouped(t), x, 9);
    }
    g.textAlign = 'left';
    if (!rows.length) {
      g.fillStyle = '#666';
      g.fillText('no warp slices on this SM (a summary-level trace, or none in its window)', LABEL, AXIS + 7);
    }
    rows.forEach(function (r, i) {
      const y = AXIS + i * rh;
      g.fillStyle = '#333';
      g.fillText(r.label, 2, y + rh / 2, LABEL - 6);
      for (const run of runs(columns(r, view[0], view[1], PLOT))) {
        g.fillStyle = D.colors[run[2]];
        g.fillRect(LABEL + run[0], y, run[1] - run[0], rh - 1);
      }
    });
    if (drag && drag.mode === 'select') {
      g.fillStyle = 'rgba(21, 101, 192, 0.15)';
      g.fillRect(Math.min(drag.x0, drag.x), 0, Math.abs(drag.x - drag.x0), h);
    }
    const ds = canvas.dataset;
    ds.from = String(Math.round(view[0])); ds.to = String(Math.round(view[1]));
    ds.sm = String(cur.sm); ds.rows = String(rows.length); ds.rowHeight = String(rh);
    ds.plotLeft = String(LABEL); ds.plotWidth = String(PLOT); ds.axis = String(AXIS);
    document.getElementById('range').textContent = 'cycles ' + grouped(view[0]) + '–' + grouped(view[1]) +
      ' (' + grouped(view[1] - view[0]) + ' of ' + grouped(D.end) + ')';
  }
  function setView(a, b) {
    const span = Math.min(D.end, Math.max(MIN_SPAN, b - a));
    a = Math.max(0, Math.min(D.end - span, a));
    view = [a, a + span];
    drawTimeline();
    drawUnits();
  }
  function zoomAt(t, f) {
    const span = view[1] - view[0], s = Math.min(D.end, Math.max(MIN_SPAN, span * f));
    setView(t - (t - view[0]) * s / span, t - (t - view[0]) * s / span + s);
  }
  function pan(dx) {
    const d = dx / PLOT * (view[1] - view[0]);
    setView(view[0] + d, view[1] + d);
  }
  function at(e) {
    const b = canvas.getBoundingClientRect();
    return { x: e.clientX - b.left, y: e.clientY - b.top };
  }
  canvas.addEventListener('wheel', function (e) {
    e.preventDefault();
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) pan(e.deltaX || e.deltaY);
    // A wheel that counts in lines (deltaMode 1) scrolls about 33 px a line.
    else zoomAt(cycleAt(at(e).x), Math.exp(e.deltaY * (e.deltaMode === 1 ? 33 : 1) * 0.002));
  }, { passive: false });
  canvas.addEventListener('mousedown', function (e) {
    const p = at(e);
    drag = { mode: p.y < AXIS || e.shiftKey ? 'select' : 'pan', x0: p.x, x: p.x, view: view.slice() };
    e.preventDefault();
  });
  window.addEventListener('mousemove', function (e) {
    if (!drag) return;
    drag.x = at(e).x;
    if (drag.mode === 'pan') {
      const d = (drag.x - drag.x0) / PLOT * (drag.view[1] - drag.view[0]);
      setView(drag.view[0] - d, drag.view[1] - d);
    } else drawTimeline();
  });
  window.addEventListener('mouseup', function () {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (d.mode === 'select' && Math.abs(d.x - d.x0) >= 3) {
      setView(cycleAt(Math.max(LABEL, Math.min(d.x0, d.x))), cycleAt(Math.min(LABEL + PLOT, Math.max(d.x0, d.x))));
    } else drawTimeline();
  });
  canvas.addEventListener('dblclick', function () { setView(0, D.end); });
  canvas.addEventListener('mousemove', function (e) {
    if (drag) return;
    const p = at(e), rows = rowsOf(cur), i = Math.floor((p.y - AXIS) / rowHeight(rows.length));
    const ok = p.x >= LABEL && p.x < LABEL + PLOT && i >= 0 && i < rows.length;
    showTip(ok ? sliceTip(rows[i], cycleAt(p.x), (view[1] - view[0]) / PLOT) : null, e);
  });
  canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
  const buttons = {
    'zoom-in': function () { zoomAt((view[0] + view[1]) / 2, 0.5); },
    'zoom-out': function () { zoomAt((view[0] + view[1]) / 2, 2); },
    'pan-left': function () { pan(-PLOT / 4); },
    'pan-right': function () { pan(PLOT / 4); },
    'zoom-reset': function () { setView(0, D.end); },
  };
  Object.keys(buttons).forEach(function (id) {
    document.getElementById(id).addEventListener('click', buttons[id]);
  });

  // One mainloop iteration of each warpgroup.
  const iteration = document.getElementById('iteration');
  function drawIteration() {
    const it = cur.iteration;
    if (!it) {
      iteration.innerHTML = '<p class="note">No mainloop on this SM: the trace has no wgmma groups committed in a loop here.</p>';
      return;
    }
    const v0 = it.from, v1 = it.to, lane = 52, x = function (t) { return LABEL + (t - v0) / (v1 - v0) * PLOT; };
    const h = 14 + it.wgs.length * lane + 30;
    let o = '<svg id="iteration-chart" width="' + W + '" height="' + h + '" data-from="' + v0 + '" data-to="' + v1 + '">';
    it.wgs.forEach(function (wg, k) {
      const y = 14 + k * lane, a = x(wg.iteration[0]), b = x(wg.iteration[1]);
      o += '<g class="wg" data-wg="' + esc(wg.label) + '" data-index="' + wg.index + '" data-count="' + wg.count +
        '" data-from="' + wg.iteration[0] + '" data-to="' + wg.iteration[1] + '">';
      o += '<text x="0" y="' + (y + 20) + '" font-weight="bold">' + esc(wg.label) + '</text>';
      o += '<text x="0" y="' + (y + 36) + '" class="axis">warp 0\'s states</text>';
      o += '<path d="M' + a + ' ' + (y + 6) + 'V' + y + 'H' + b + 'V' + (y + 6) + '" fill="none" stroke="#333"/>';
      o += '<text x="' + (a + 4) + '" y="' + (y - 2) + '" class="axis">iteration ' + wg.index + ' of ' + wg.count +
        ': ' + grouped(wg.iteration[1] - wg.iteration[0]) + ' cycles</text>';
      for (const m of wg.gemms) {
        const g0 = x(Math.max(v0, m[0])), g1 = x(Math.min(v1, m[1])), name = m[2] ? 'GEMM ' + m[2] : 'GEMM';
        const text = wg.label + ': ' + name + (m[2] ? ' of iteration' : ' outside the loop') +
          ' (wgmma group ' + m[5] + ' of ' + wg.groups + ')\ncommitted at cycle ' + grouped(m[3]) + ': ' +
          D.strings[m[4]] + '\nruns ' + grouped(m[0]) + '–' + grouped(m[1]) + ': ' + grouped(m[1] - m[0]) + ' cycles';
        o += '<rect class="gemm" data-gemm="' + m[2] + '" data-tip="' + esc(text) + '" x="' + g0 + '" y="' + (y + 8) +
          '" width="' + Math.max(1, g1 - g0) + '" height="16" fill="' + (m[2] ? GEMM[(m[2] - 1) % GEMM.length] : '#90a4ae') + '"/>';
        if (g1 - g0 >= 48) {
          o += '<text x="' + (g0 + g1) / 2 + '" y="' + (y + 20) + '" text-anchor="middle" fill="' +
            (m[2] === 2 || m[2] === 4 ? '#000' : '#fff') + '" pointer-events="none">' + name + '</text>';
        }
      }
      if (wg.row !== null) {
        for (const run of runs(columns(rowsOf(cur)[wg.row], v0, v1, PLOT))) {
          o += '<rect class="strip" data-row="' + wg.row + '" x="' + (LABEL + run[0]) + '" y="' + (y + 28) +
            '" width="' + (run[1] - run[0]) + '" height="10" fill="' + D.colors[run[2]] + '"/>';
        }
      }
      o += '</g>';
    });
    const base = 14 + it.wgs.length * lane;
    for (const t of ticks(0, v1 - v0, PLOT)) {
      o += '<text x="' + x(v0 + t) + '" y="' + (base + 4) + '" text-anchor="middle" class="axis">+' + grouped(t) + '</text>';
    }
    o += '<text x="' + LABEL + '" y="' + (base + 20) + '" class="axis">cycles from ' + grouped(v0) + '</text></svg>';
    o += '<p><button id="iteration-show">show these cycles in the timeline</button></p>';
    iteration.innerHTML = o;
    document.getElementById('iteration-show').addEventListener('click', function () { setView(v0, v1); });
  }
  iteration.addEventListener('mousemove', function (e) {
    const el = e.target.closest && e.target.closest('[data-tip], .strip');
    if (!el) { tip.hidden = true; return; }
    if (el.dataset.tip) { showTip(el.dataset.tip, e); return; }
    const it = cur.iteration, b = el.ownerSVGElement.getBoundingClientRect();
    const t = it.from + (e.clientX - b.left - LABEL) / PLOT * (it.to - it.from);
    showTip(sliceTip(rowsOf(cur)[Number(el.dataset.row)], t, (it.to - it.from) / PLOT), e);
  });
  iteration.addEventListener('mouseleave', function () { tip.hidden = true; });

  // Units over time, one small chart each over the timeline's range.
  const units = document.getElementById('counters');
  function series() {
    const out = [], b = cur.busy, gpu = D.gpu, peak = function (v, p) {
      return p || Math.max.apply(null, v.concat([1e-9]));
    };
    if (b) {
      for (const u of D.units) out.push({ name: u, t: b.t, v: b[u], max: 1, pct: true, scope: 'SM ' + cur.sm });
    }
    if (gpu.t.length) {
      out.push({ name: 'L2 B/cycle', t: gpu.t, v: gpu.l2, max: peak(gpu.l2, gpu.l2_peak), pct: false, scope: 'GPU-wide' });
      out.push({ name: 'DRAM B/cycle', t: gpu.t, v: gpu.dram, max: peak(gpu.dram, gpu.dram_peak), pct: false, scope: 'GPU-wide' });
    }
    return out;
  }
  // Sample i of s holds from s.t[i] to the next sample (the last one to the run's end).
  function until(s, i) { return i + 1 < s.t.length ? s.t[i + 1] : Math.max(D.end, s.t[i]); }
  function drawUnits() {
    unitSeries = series();
    const h = 34, fmt = function (s, v) { return s.pct ? (100 * v).toFixed(1) + '%' : v.toFixed(1); };
    const x = function (t) { return LABEL + (Math.max(view[0], Math.min(view[1], t)) - view[0]) / (view[1] - view[0]) * PLOT; };
    let o = '';
    unitSeries.forEach(function (s, k) {
      let d = 'M' + LABEL + ' ' + h, sum = 0, top = 0;
      for (let i = 0; i < s.t.length; i++) {
        const a = Math.max(view[0], s.t[i]), b = Math.min(view[1], until(s, i));
        if (b <= a) continue;
        const y = h - 2 - (h - 4) * Math.min(1, s.v[i] / s.max);
        d += 'L' + x(a).toFixed(1) + ' ' + y.toFixed(1) + 'L' + x(b).toFixed(1) + ' ' + y.toFixed(1);
        sum += s.v[i] * (b - a);
        top = Math.max(top, s.v[i]);
      }
      d += 'L' + (LABEL + PLOT) + ' ' + h + 'Z';
      const mean = sum / (view[1] - view[0]);
      o += '<svg class="unit" data-index="' + k + '" data-unit="' + esc(s.name) + '" data-from="' + Math.round(view[0]) +
        '" data-to="' + Math.round(view[1]) + '" data-mean="' + mean.toFixed(4) + '" data-peak="' + top.toFixed(4) +
        '" width="' + W + '" height="' + h + '">' +
        '<rect x="' + LABEL + '" y="0" width="' + PLOT + '" height="' + h + '" fill="#fafafa" stroke="#ddd"/>' +
        '<path d="' + d + '" fill="#9fa8da" stroke="#3949ab" stroke-width="1"/>' +
        '<text x="0" y="13">' + esc(s.name) + ' <tspan class="axis">' + esc(s.scope) + '</tspan></text>' +
        '<text x="0" y="27" class="axis">mean ' + fmt(s, mean) + ', peak ' + fmt(s, top) +
        (s.pct ? '' : ' of ' + grouped(s.max)) + '</text></svg>';
    });
    units.innerHTML = o || '<p class="note">The trace has no counter samples.</p>';
  }
  units.addEventListener('mousemove', function (e) {
    const el = e.target.closest && e.target.closest('svg.unit');
    if (!el) { tip.hidden = true; return; }
    const s = unitSeries[Number(el.dataset.index)], b = el.getBoundingClientRect();
    const t = cycleAt(e.clientX - b.left);
    let i = 0;
    while (i + 1 < s.t.length && s.t[i + 1] <= t) i++;
    if (!s.t.length || t < view[0] || t > view[1]) { tip.hidden = true; return; }
    const v = s.pct ? (100 * s.v[i]).toFixed(1) + '% busy' : s.v[i].toFixed(1) + ' B/cycle';
    showTip(s.name + ' (' + s.scope + '): ' + v + '\ncycles ' + grouped(s.t[i]) + '–' + grouped(until(s, i)), e);
  });
  units.addEventListener('mouseleave', function () { tip.hidden = true; });

  function choose() {
    cur = D.sms[Number(chooser.value)] || { sm: 0, rows: [], busy: null, iteration: null };
    drawTimeline();
    drawIteration();
    drawUnits();
  }
  chooser.addEventListener('change', choose);
  choose();

  // Where the diagnosis' charts end on the page, for the test that they fit the first screen.
  const panels = document.querySelector('#diagnosis .panels');
  if (panels) {
    const r = panels.getBoundingClientRect();
    document.body.setAttribute('data-panels-bottom', String(Math.round(r.bottom + window.scrollY)));
  }
  document.body.setAttribute('data-rendered', 'ok');
})();
