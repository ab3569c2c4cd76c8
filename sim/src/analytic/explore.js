// `sim explore`'s widgets. DATA holds, for every preset, the cells `sim analyze` prints over
// each control's range (analytic/explore.rs); a control's move looks its cells up, shows the
// equivalent command and redraws the widget's chart. Everything is drawn synchronously, so a
// headless browser's DOM shows the result of each move.
window.onerror = function (m) { document.body.setAttribute('data-error', String(m)); };
(function () {
  'use strict';
  const D = DATA, T = D.tables;
  const LIMITS = ['blocks', 'regs', 'smem', 'threads'];
  const W = 560, PAD = 46;
  const $ = function (id) { return document.getElementById(id); };
  const put = function (sel, text) { document.querySelector(sel).textContent = text; };
  const num = function (id) { return Number($(id).value); };
  const grouped = function (n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); };
  let G = null;

  // Chart helpers: markup strings, set as an <svg>'s content.
  const line = function (x1, y1, x2, y2, style) {
    return '<line x1="' + x1.toFixed(1) + '" y1="' + y1.toFixed(1) + '" x2="' + x2.toFixed(1) + '" y2="' + y2.toFixed(1) + '" style="' + style + '"/>';
  };
  const text = function (x, y, s, anchor) {
    return '<text x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" text-anchor="' + (anchor || 'start') + '">' + s + '</text>';
  };
  const path = function (pts, style) {
    return '<polyline fill="none" style="' + style + '" points="' + pts.map(function (p) { return p[0].toFixed(1) + ',' + p[1].toFixed(1); }).join(' ') + '"/>';
  };
  // A plot area: x and y of a value, and its frame with axis labels.
  function plot(svg, x0, x1, y0, y1, log) {
    const h = Number(svg.getAttribute('height')), top = 10, bottom = h - 24;
    const f = log ? Math.log10 : function (v) { return v; };
    const p = {
      x: function (v) { return PAD + (v - x0) / (x1 - x0) * (W - PAD - 14); },
      y: function (v) { return bottom - (f(v) - f(y0)) / (f(y1) - f(y0)) * (bottom - top); },
      top: top, bottom: bottom,
    };
    p.frame = line(PAD, top, PAD, bottom, 'stroke:#999') + line(PAD, bottom, W - 14, bottom, 'stroke:#999');
    return p;
  }

  function occupancy() {
    const o = G.occupancy, warps = num('occ-threads') / 32, regs = num('occ-regs'), kib = num('occ-smem');
    const lim = {
      blocks: String(o.blocks),
      regs: String(T[o.regs][warps - 1][regs - 1]),
      smem: T[o.smem][kib],
      threads: String(T[o.threads][warps - 1]),
    };
    // The binding limit: the smallest, the first by name on a tie; '-' is no limit.
    let bind = null;
    LIMITS.forEach(function (k) {
      if (lim[k] !== '-' && (bind === null || Number(lim[k]) < Number(lim[bind]))) bind = k;
    });
    const ctas = Number(lim[bind]), resident = ctas * warps;
    LIMITS.forEach(function (k) {
      put('[data-occ="' + k + '"]', lim[k]);
      document.querySelector('tr[data-limit="' + k + '"]').className = k === bind ? 'bind' : '';
    });
    put('#occ-ctas', T[o.ctas][ctas]);
    put('#occ-limiter', bind);
    put('#occ-warps', resident + ' of ' + o.slots);
    put('#occ-share', T[o.share][resident]);
    put('#occ-threads-v', String(warps * 32));
    put('#occ-regs-v', String(regs));
    put('#occ-smem-v', kib + ' KiB');
    put('#occ-cmd', 'sim analyze occupancy --gpu ' + G.name + ' --threads ' + warps * 32 + ' --regs ' + regs + ' --smem ' + kib * 1024);
    // A bar per limit on a scale of the CTA slots; the binding one in red.
    const svg = $('occ-chart'), x = function (v) { return 70 + Math.min(v, o.blocks) / o.blocks * (W - 110); };
    let s = '';
    LIMITS.forEach(function (k, i) {
      const y = 6 + i * 24, v = lim[k];
      s += text(64, y + 13, k, 'end');
      if (v === '-') { s += text(74, y + 13, 'no limit'); return; }
      s += '<rect x="70" y="' + y + '" width="' + (x(Number(v)) - 70).toFixed(1) + '" height="16" fill="' + (k === bind ? '#c62828' : '#90a4ae') + '"/>';
      s += text(x(Number(v)) + 4, y + 13, v + (Number(v) > o.blocks ? ' (off the scale)' : ''));
    });
    svg.innerHTML = s;
  }

  function wgmma() {
    const w = G.wgmma, n = num('wgmma-n');
    put('#wgmma-n-v', String(n));
    put('#wgmma-cmd', 'sim analyze wgmma --gpu ' + G.name + ' --n ' + n);
    $('wgmma-none').hidden = !w.error;
    $('wgmma-body').hidden = !!w.error;
    if (w.error) { put('#wgmma-none', w.error); return; }
    const c = w.cells[w.n.indexOf(n)];
    ['compute', 'ss', 'rs', 'ss-ratio', 'rs-ratio', 'ss-util'].forEach(function (k, i) { put('[data-wgmma="' + k + '"]', c[i]); });
    put('#wgmma-fed', w.fed);
    // Cycles over N: the math against SS and RS feed; they cross at the break-even N.
    const series = [0, 1, 2].map(function (k) { return w.cells.map(function (r) { return Number(r[k]); }); });
    const top = Math.max.apply(null, series[0].concat(series[1]));
    const p = plot($('wgmma-chart'), w.n[0], w.n[w.n.length - 1], 0, top);
    const styles = ['stroke:#1565c0;stroke-width:2', 'stroke:#c62828;stroke-width:2', 'stroke:#ef9a9a;stroke-width:2'];
    const names = ['compute', 'SS feed', 'RS feed'];
    let s = p.frame;
    series.forEach(function (ys, k) {
      s += path(ys.map(function (v, i) { return [p.x(w.n[i]), p.y(v)]; }), styles[k]);
      s += text(W - 16, p.y(ys[ys.length - 1]) + (k === 2 ? 14 : -4), names[k], 'end');
    });
    const fed = Number((w.fed.match(/\d+/) || [0])[0]);
    if (fed) s += line(p.x(fed), p.top, p.x(fed), p.bottom, 'stroke:#555;stroke-dasharray:3,3') + text(p.x(fed) + 4, p.top + 10, w.fed);
    s += line(p.x(n), p.top, p.x(n), p.bottom, 'stroke:#000') + '<circle cx="' + p.x(n).toFixed(1) + '" cy="' + p.y(Number(c[0])).toFixed(1) + '" r="4" fill="#1565c0"/>';
    s += text(PAD - 4, p.y(top) + 4, String(top), 'end') + text(PAD - 4, p.bottom, '0', 'end') + text(p.x(w.n[0]), p.bottom + 16, 'N = ' + w.n[0]) + text(W - 14, p.bottom + 16, String(w.n[w.n.length - 1]), 'end');
    $('wgmma-chart').innerHTML = s;
  }

  function attention() {
    const a = G.attention, bm = num('att-bm'), hit = num('att-hit');
    put('#att-bm-v', String(bm));
    put('#att-hit-v', hit + '%');
    put('#att-cmd', 'sim analyze attention --gpu ' + G.name + ' --bm ' + bm + ' --l2-hit ' + (hit / 100).toFixed(2));
    $('att-none').hidden = !a.error;
    $('att-body').hidden = !!a.error;
    if (a.error) { put('#att-none', a.error); return; }
    const per = T[a.per_bm], b = per[a.bm.indexOf(bm)], at = b.at[hit];
    ['intensity', 'balance', 'shortfall', 'needed'].forEach(function (k, i) { put('[data-att="' + k + '"]', b.rows[i]); });
    put('#att-at', hit + '%');
    put('[data-att="effective"]', at[0]);
    put('[data-att="bound"]', at[1]);
    // Intensity against HBM over the hit rate (log scale), each M in grey and the one chosen
    // in blue; the balance line; where the chosen M reaches it.
    const p = plot($('att-chart'), 0, 99, 30, 30000, true);
    let s = p.frame + line(p.x(0), p.y(a.balance), p.x(99), p.y(a.balance), 'stroke:#555;stroke-dasharray:3,3');
    s += text(p.x(0) + 4, p.y(a.balance) - 4, 'balance ' + b.rows[1] + ' FLOP/B');
    per.forEach(function (r) {
      const pts = r.at.map(function (v, i) { return [p.x(i), p.y(Number(v[0]))]; });
      s += path(pts, r === b ? 'stroke:#1565c0;stroke-width:2.5' : 'stroke:#cfd8dc');
    });
    s += text(p.x(99) - 6, p.y(Number(b.at[99][0])) + 4, 'M = ' + bm, 'end');
    const need = parseFloat(b.rows[3]);
    s += line(p.x(need), p.top, p.x(need), p.bottom, 'stroke:#c62828;stroke-dasharray:3,3') + text(p.x(need) + 4, p.bottom - 6, 'needed ' + b.rows[3]);
    s += '<circle cx="' + p.x(hit).toFixed(1) + '" cy="' + p.y(Number(at[0])).toFixed(1) + '" r="4" fill="#1565c0"/>';
    [100, 1000, 10000].forEach(function (v) { s += text(PAD - 4, p.y(v) + 4, String(v), 'end'); });
    s += text(p.x(0), p.bottom + 16, 'L2 hit 0%') + text(W - 14, p.bottom + 16, '99%', 'end');
    $('att-chart').innerHTML = s;
  }

  function waves() {
    const v = G.waves, ctas = num('waves-ctas'), size = v.sizes[num('waves-cluster')];
    // The tiles are whole clusters: the slider steps by the cluster size.
    const slider = $('waves-tiles');
    slider.min = size; slider.step = size;
    const tiles = num('waves-tiles');
    const rows = T[v.rows][ctas - 1][v.sizes.indexOf(size)], c = rows[tiles / size - 1];
    const per = v.per_wave[ctas - 1][v.sizes.indexOf(size)];
    put('#waves-tiles-v', String(tiles));
    put('#waves-ctas-v', String(ctas));
    put('#waves-cluster-v', String(size));
    put('#waves-per-wave', per);
    ['waves', 'last', 'efficiency'].forEach(function (k, i) { put('[data-waves="' + k + '"]', c[i]); });
    put('#waves-cmd', 'sim analyze waves --gpu ' + G.name + ' --tiles ' + tiles + ' --ctas-per-sm ' + ctas + (size > 1 ? ' --cluster ' + size : ''));
    // Efficiency over the tiles: a full wave at each multiple of its slots, then a drop.
    const p = plot($('waves-chart'), 1, v.max_tiles, 0, 100);
    let s = p.frame;
    for (let k = Number(per); k < v.max_tiles; k += Number(per)) s += line(p.x(k), p.top, p.x(k), p.bottom, 'stroke:#ddd');
    s += path(rows.map(function (r, i) { return [p.x((i + 1) * size), p.y(parseFloat(r[2]))]; }), 'stroke:#1565c0;stroke-width:1.5');
    s += '<circle cx="' + p.x(tiles).toFixed(1) + '" cy="' + p.y(parseFloat(c[2])).toFixed(1) + '" r="4" fill="#c62828"/>';
    s += text(PAD - 4, p.y(100) + 4, '100%', 'end') + text(PAD - 4, p.bottom, '0%', 'end');
    s += text(p.x(1), p.bottom + 16, '1 tile') + text(W - 14, p.bottom + 16, grouped(v.max_tiles) + ' tiles', 'end');
    $('waves-chart').innerHTML = s;
  }

  // A preset's ranges on the sliders (a value out of range is clamped to it).
  function ranges(name) {
    G = D.gpus.find(function (g) { return g.name === name; });
    $('occ-threads').max = G.occupancy.max_warps * 32;
    $('occ-regs').max = G.occupancy.max_regs;
    $('occ-smem').max = T[G.occupancy.smem].length - 1;
    $('waves-tiles').max = G.waves.max_tiles;
    $('waves-ctas').max = T[G.waves.rows].length;
    $('waves-cluster').max = G.waves.sizes.length - 1;
  }
  function all() { occupancy(); wgmma(); attention(); waves(); }

  const select = $('gpu');
  D.gpus.forEach(function (g) {
    const o = document.createElement('option');
    o.value = g.name; o.textContent = g.name + ' (' + g.sms + ' SMs)';
    select.appendChild(o);
  });
  select.value = D.initial;
  select.addEventListener('change', function () { ranges(select.value); all(); });
  ranges(D.initial);
  const draw = { occ: occupancy, wgm: wgmma, att: attention, wav: waves };
  [['occ-threads', 256], ['occ-regs', 64], ['occ-smem', 48], ['wgmma-n', 64], ['att-bm', 64], ['att-hit', 50], ['waves-tiles', 133], ['waves-ctas', 1], ['waves-cluster', 0]].forEach(function (c) {
    const input = $(c[0]);
    input.value = c[1];
    input.addEventListener('input', draw[c[0].slice(0, 3)]);
  });
  all();
  document.body.setAttribute('data-rendered', 'ok');
})();
