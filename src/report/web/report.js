// The HTML report: builds the page from the experiment's aggregate.json (embedded by
// `sigmatrace report --html` as the script element #sigmatrace-aggregate) with Apache ECharts.
// Every number shown is read from that JSON, never recomputed from events; each figure is a
// <section class="figure" data-figure="ID">. With the URL fragment #export, each figure is also
// rendered to an SVG string and a PNG data URL, written as JSON into a pre element appended to the
// body, id sigmatrace-export
// (what `sigmatrace report --plots DIR` reads back through a headless browser).
(function () {
  'use strict';
  const agg = JSON.parse(document.getElementById('sigmatrace-aggregate').textContent);
  const root = document.getElementById('report');
  const exporting = location.hash === '#export';
  const figures = [];  // {id, title, option, width, height}

  // ---- formatting -------------------------------------------------------------------------
  const exact = (n) => (n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'));
  function bytes(n) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = Number(n), i = 0;
    while (v >= 1024 && i < u.length - 1) v /= 1024, ++i;
    return (i ? v.toFixed(v < 10 ? 2 : 1) : String(v)) + ' ' + u[i];
  }
  function duration(ns) {
    const v = Number(ns);
    if (v < 1e3) return v.toFixed(0) + ' ns';
    if (v < 1e6) return (v / 1e3).toFixed(2) + ' µs';
    if (v < 1e9) return (v / 1e6).toFixed(2) + ' ms';
    return (v / 1e9).toFixed(3) + ' s';
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  // A table whose numeric cells carry their exact value (data-value) beside what they show.
  function table(key, head, rows) {
    const t = el('table', {'data-table': key});
    t.append(el('tr', {}, ...head.map((h) => el('th', {}, h))));
    for (const r of rows)
      t.append(el('tr', {}, ...r.map((c) => (typeof c === 'number' ? el('td', {'data-value': c, class: 'num'}, exact(c)) : el('td', {}, c ?? '–')))));
    return t;
  }
  function section(title, ...children) {
    root.append(el('h2', {}, title), ...children);
  }
  function note(text) { return el('p', {class: 'note'}, text); }

  // ---- summary -----------------------------------------------------------------------------
  const procs = agg.processes || [];
  const sum = (xs, f) => xs.reduce((a, x) => a + (f(x) || 0), 0);
  const spanNs = agg.end_ns - agg.start_ns;
  root.append(el('h1', {}, 'sigmatrace report'), el('p', {class: 'experiment'}, agg.experiment));
  section('Summary', table('summary', ['what', 'value'], [
    ['duration', duration(spanNs)],
    ['events', agg.events],
    ['processes', procs.length],
    ['hosts', (agg.hosts || []).length],
    ['operations', sum(procs, (p) => p.ops)],
    ['bytes out (writes, sends, atomics)', sum(procs, (p) => p.bytes_out)],
    ['bytes read', sum(procs, (p) => p.bytes_read)],
    ['completions', sum(procs, (p) => p.completions)],
    ['errors', agg.errors],
    ['events dropped', agg.events_dropped],
  ]));
  const notOnPage = Object.entries(agg.left_out_of_page || {}).filter(([, n]) => n).map(([k, n]) => exact(n) + ' ' + k);
  if (notOnPage.length) root.append(note('Listed in aggregate.json and trace.sqlite, not on this page: ' + notOnPage.join(', ') + '.'));

  // ---- figures -----------------------------------------------------------------------------
  // Figures go into the grid of the last heading: half width, or the whole row when wide.
  let grid = null;
  function heading(title) {
    grid = el('div', {class: 'figures'});
    section(title, grid);
  }
  function figure(id, title, caption, option, height, wide) {
    const chart = el('div', {class: 'chart', style: 'height:' + (height || 380) + 'px'});
    grid.append(el('section', {class: 'figure' + (wide ? ' wide' : ''), 'data-figure': id}, el('h3', {}, title), chart, el('p', {class: 'caption'}, caption)));
    figures.push({id, title, option, chart, height: height || 380, cells: 0});
  }
  const base = {animation: false, textStyle: {fontFamily: 'sans-serif'}, tooltip: {}};
  const binsX = () => {
    const s = agg.series, xs = [];
    for (let b = 0; b < s.bins; ++b) xs.push(((s.start_ns + b * s.bin_ns - agg.start_ns) / 1e6).toFixed(3));
    return xs;
  };
  // GB/s of each bin: bytes / bin width (10^9 bytes per s).
  const rate = (bins) => bins.map((v) => v / agg.series.bin_ns);

  // A matrix without its last row and column ("unknown": peers not in the trace) when both are
  // empty in bytes and operations.
  function known(m) {
    const n = m.labels.length, u = n - 1;
    if (!n || m.labels[u] !== 'unknown') return m;
    for (let i = 0; i < n; ++i) if (m.bytes[u][i] || m.bytes[i][u] || m.ops[u][i] || m.ops[i][u]) return m;
    const cut = (rows) => rows.slice(0, u).map((r) => r.slice(0, u));
    return {labels: m.labels.slice(0, u), bytes: cut(m.bytes), ops: cut(m.ops)};
  }
  function heatmap(kind, what, m, title) {
    const cells = m[what];
    const n = m.labels.length;
    let total = 0, max = 0;
    const data = [];
    for (let s = 0; s < n; ++s)
      for (let d = 0; d < n; ++d) {
        total += cells[s][d];
        max = Math.max(max, cells[s][d]);
        if (cells[s][d]) data.push([d, s, cells[s][d]]);
      }
    if (!total) return;
    const labelled = n <= 16;  // every cell's exact value is written in it
    figure(kind + '-' + what, (title || kind + ' matrix') + ': ' + what, (what === 'bytes' ? bytes(total) + ' (' + exact(total) + ' bytes)' : exact(total) + ' operations') +
           ' from the row to the column' + (m.labels[n - 1] === 'unknown' ? '; "unknown": peers not in the trace.' : '.'), {
      ...base,
      tooltip: {formatter: (p) => m.labels[p.value[1]] + ' → ' + m.labels[p.value[0]] + ': ' + exact(p.value[2])},
      grid: {left: 120, right: 90, top: 20, bottom: 90},
      xAxis: {type: 'category', data: m.labels, name: 'to', axisLabel: {rotate: 30}},
      yAxis: {type: 'category', data: m.labels, name: 'from', inverse: true},
      visualMap: {min: 0, max: max, calculable: false, text: ['high', 'low'], orient: 'vertical', right: 0, top: 'center', inRange: {color: ['#f7fbff', '#6baed6', '#08306b']}},
      series: [{type: 'heatmap', data: data, label: {show: labelled, formatter: (p) => exact(p.value[2])}}],
    }, Math.max(300, Math.min(900, 60 + 34 * n)));
    figures[figures.length - 1].cells = data.length;
  }
  heading('Who talks to whom');
  for (const [kind, m] of Object.entries(agg.matrices || {})) {
    heatmap(kind, 'bytes', known(m));
    heatmap(kind, 'ops', known(m));
  }

  function lines(id, title, rows, label, valueOf, unit, caption) {
    if (!rows.length) return;
    figure(id, title, caption, {
      ...base,
      tooltip: {trigger: 'axis'},
      dataZoom: [{type: 'inside'}],  // wheel or pinch to zoom into the window
      legend: {type: 'scroll', top: 0},
      grid: {left: 70, right: 30, top: 40, bottom: 50},
      xAxis: {type: 'category', data: binsX(), name: 'ms', nameLocation: 'middle', nameGap: 30},
      yAxis: {type: 'value', name: unit},
      series: rows.map((r) => ({type: 'line', name: label(r), showSymbol: false, step: 'middle', data: valueOf(r)})),
    }, 380, true);
  }
  const s = agg.series;
  if (s) {
    heading('Over time');
    const binText = 'bins of ' + duration(s.bin_ns);
    const totalOf = (rows, f) => exact(sum(rows, f));
    lines('bandwidth-hosts', 'Bandwidth over time per host', s.hosts, (h) => h.host + ' (' + h.layer + ')', (h) => rate(h.bytes), 'GB/s',
          totalOf(s.hosts, (h) => h.total_bytes) + ' bytes in ' + totalOf(s.hosts, (h) => h.total_ops) + ' operations (writes, sends, atomics, reads, by their initiator); ' + binText + '.');
    const gpuTraffic = s.gpus.filter((g) => g.total_ops);
    lines('bandwidth-gpus', 'Bandwidth over time per GPU (GPU-initiated, recovered WQEs)', gpuTraffic, (g) => g.gpu_label, (g) => rate(g.bytes), 'GB/s',
          totalOf(gpuTraffic, (g) => g.total_bytes) + ' bytes in ' + totalOf(gpuTraffic, (g) => g.total_ops) + ' operations; ' + binText + '.');
    lines('bandwidth-qps', 'Bandwidth over time of the busiest QPs', s.top_qps, (q) => q.label, (q) => rate(q.bytes), 'GB/s',
          'The ' + s.top_qps.length + ' QPs that moved the most bytes of the ' + s.qps_with_traffic + ' that moved any; ' + binText + '.');
    const ringing = s.gpus.filter((g) => g.total_doorbells);
    lines('doorbell-rate', 'Doorbell rate per GPU', ringing, (g) => g.gpu_label, (g) => g.doorbells.map((v) => (v * 1e9) / s.bin_ns), 'doorbells/s',
          totalOf(ringing, (g) => g.total_doorbells) + ' doorbells; ' + binText + '.');

    // A histogram of non-empty buckets as the outline of its bars: up at each bucket's lower edge,
    // across, and down to 0 where the next non-empty bucket does not follow at once.
    const histogramOutline = (buckets) => {
      const pts = [];
      buckets.forEach((b, i) => {
        if (i === 0 || buckets[i - 1].to_ns < b.from_ns) pts.push([b.from_ns, 0]);
        pts.push([b.from_ns, b.ops], [b.to_ns, b.ops]);
        if (i + 1 === buckets.length || buckets[i + 1].from_ns > b.to_ns) pts.push([b.to_ns, 0]);
      });
      return pts;
    };
    if (s.latency.length) {
      heading('Durations');
      figure('latency', 'Operation durations (post to completion) per kind', s.latency.map((h) => h.layer + ' ' + h.opcode + ': ' + exact(h.ops) + ' ops, median ' +
             duration(h.p50_ns) + ', p99 ' + duration(h.p99_ns)).join('; ') + '. Buckets are a quarter of a power of two wide.', {
        ...base,
        tooltip: {trigger: 'axis'},
        legend: {top: 0},
        grid: {left: 70, right: 30, top: 40, bottom: 50},
        xAxis: {type: 'log', name: 'ns', nameLocation: 'middle', nameGap: 30, logBase: 10},
        yAxis: {type: 'value', name: 'operations'},
        series: s.latency.map((h) => ({type: 'line', showSymbol: false, areaStyle: {opacity: 0.15}, name: h.layer + ' ' + h.opcode,
                                       data: histogramOutline(h.buckets)})),
      }, 380, true);
      root.append(table('latency', ['layer', 'kind', 'ops', 'min ns', 'median ns', 'p99 ns', 'max ns'],
                        s.latency.map((h) => [h.layer, h.opcode, h.ops, h.min_ns, Math.round(h.p50_ns), Math.round(h.p99_ns), h.max_ns])));
    }
    if (s.kernels.length) {
      heading('GPU doorbells per kernel');
      const ks = s.kernels.slice(0, 20);
      const name = (k) => (k.kernel_name || '(no launch seen)') + ' · ' + k.gpu_label;
      figure('kernel-doorbells', 'Doorbells and WQEs per doorbell, per kernel', ks.length + ' of ' + s.kernels.length + ' kernels (the ones that rang most); ' +
             totalOf(ks, (k) => k.doorbells) + ' doorbells announcing ' + totalOf(ks, (k) => k.wqebbs) + ' WQEBBs.', {
        ...base,
        tooltip: {trigger: 'axis'},
        legend: {top: 0},
        grid: {left: 70, right: 70, top: 40, bottom: 120},
        xAxis: {type: 'category', data: ks.map(name), axisLabel: {rotate: 25, width: 200, overflow: 'truncate'}},
        yAxis: [{type: 'value', name: 'doorbells'}, {type: 'value', name: 'WQEBBs per doorbell'}],
        series: [{type: 'bar', name: 'doorbells', data: ks.map((k) => k.doorbells)},
                 {type: 'line', name: 'WQEBBs per doorbell', yAxisIndex: 1, data: ks.map((k) => k.wqebbs_per_doorbell || 0)}],
      }, 420, true);
      root.append(table('kernels', ['kernel', 'GPU', 'doorbells', 'WQEBBs', 'WQEs', 'data', 'control', 'doorbells/s'],
                        ks.map((k) => [k.kernel_name || '(no launch seen)', k.gpu_label, k.doorbells, k.wqebbs, k.wqes, k.data_doorbells, k.control_doorbells,
                                       k.doorbells_per_s ? Math.round(k.doorbells_per_s) : '–'])));
    }
    kernelFigures(s);
  } else {
    root.append(note('This aggregate.json has no series (written by an older sigmatrace): no plots over time.'));
  }
  // What GPU kernels did, from the WQEs recovered from their send queues: who each kernel sent
  // to (a matrix per kernel: an MoE layer's dispatch apart from its combine), when each GPU
  // arrived at each device barrier of a kernel (its control phases lined up across GPUs), and
  // each kernel's data and control phases over time.
  function kernelFigures(s) {
    const byName = new Map();  // kernel -> its rows of series.kernels (one per process and GPU)
    for (const k of s.kernels) if (k.kernel) byName.set(k.kernel, [...(byName.get(k.kernel) || []), k]);
    for (const rows of byName.values()) rows.sort((a, b) => a.process_id - b.process_id || (a.gpu_label < b.gpu_label ? -1 : 1));
    const moved = (rows) => sum(rows, (k) => sum(k.to_peers || [], (t) => t.bytes));
    const senders = [...byName.entries()].filter(([, rows]) => moved(rows)).sort((a, b) => moved(b[1]) - moved(a[1])).slice(0, 4);
    // Barriers inside a kernel that also moves data (a persistent kernel's levels) first, then the
    // kernels with the most barriers.
    const movesData = (b) => (byName.get(b.kernel) || []).some((k) => (k.phases || []).some((p) => p.kind === 'data')) ? 1 : 0;
    const barriers = (s.barriers || []).slice().sort((a, b) => movesData(b) - movesData(a) || b.barriers - a.barriers).slice(0, 3);
    const phased = [...byName.entries()].filter(([, rows]) => rows.some((k) => (k.phases || []).some((p) => p.kind === 'data')) &&
                                                               rows.some((k) => (k.phases || []).some((p) => p.kind === 'control')))
      .sort((a, b) => sum(b[1], (k) => k.phases.length) - sum(a[1], (k) => k.phases.length)).slice(0, 2);
    if (!senders.length && !barriers.length && !phased.length) return;
    heading('GPU kernels: who they sent to, their barriers and phases');
    senders.forEach(([kernel, rows], i) => {
      const labels = procs.map((p) => p.label);
      if (rows.some((k) => (k.to_peers || []).some((t) => t.process_id === null))) labels.push('unknown');
      const zero = () => labels.map(() => labels.map(() => 0));
      const m = {labels, bytes: zero(), ops: zero()};
      for (const k of rows)
        for (const t of k.to_peers || []) {
          const to = t.process_id === null ? labels.length - 1 : t.process_id;
          m.bytes[k.process_id][to] += t.bytes;
          m.ops[k.process_id][to] += t.ops;
        }
      heatmap('kernel-' + i, 'bytes', m, 'Kernel ' + rows[0].kernel_name + ', by process');
    });
    barriers.forEach((b, i) => {
      const first = b.arrival_ns.map((row) => Math.min(...row));
      const most = b.last_count.indexOf(Math.max(...b.last_count));
      figure('barriers-' + i, 'Barrier arrivals of ' + b.kernel_name,
             exact(b.barriers) + ' barriers across ' + b.participants.length + ' GPUs (each one\'s n-th control phase); median spread ' +
             duration(b.median_spread_ns) + '; last most often: ' + b.participants[most].gpu_label + ', at ' + exact(b.last_count[most]) + ' of ' +
             exact(b.barriers) + (b.unmatched ? '; the GPUs ran different numbers of control phases: the first ' + exact(b.barriers) + ' are lined up' : '') + '.', {
        ...base,
        tooltip: {trigger: 'axis'},
        legend: {type: 'scroll', top: 0},
        grid: {left: 70, right: 30, top: 40, bottom: 50},
        xAxis: {type: 'category', data: b.arrival_ns.map((_, r) => r), name: 'barrier', nameLocation: 'middle', nameGap: 30},
        yAxis: {type: 'value', name: 'ms after the first'},
        series: b.participants.map((p, j) => ({type: 'line', name: p.gpu_label, symbolSize: 5, data: b.arrival_ns.map((row, r) => (row[j] - first[r]) / 1e6)})),
      }, 380, true);
      root.append(table('barriers-' + i, ['GPU', 'control phases', 'last at (barriers)'], b.participants.map((p, j) => [p.gpu_label, p.control_phases, b.last_count[j]])));
    });
    const colour = {data: '#3b78b8', control: '#e8821e'};
    phased.forEach(([kernel, rows], i) => {
      const lanes = rows.map((k) => k.gpu_label);
      const series = ['data', 'control'].map((kind) => ({
        type: 'custom', name: kind, itemStyle: {color: colour[kind]},
        encode: {x: [1, 2], y: 0},
        renderItem: (params, api) => {
          const a = api.coord([api.value(1), api.value(0)]), e = api.coord([api.value(2), api.value(0)]);
          const h = api.size([0, 1])[1] * 0.6;
          return {type: 'rect', shape: {x: a[0], y: a[1] - h / 2, width: Math.max(1.5, e[0] - a[0]), height: h}, style: {fill: colour[kind]}};
        },
        data: rows.flatMap((k, lane) => (k.phases || []).filter((p) => p.kind === kind)
          .map((p) => [lane, (p.first_ns - agg.start_ns) / 1e6, (p.last_ns - agg.start_ns) / 1e6, p.ops, p.bytes])),
      }));
      const counts = ['data', 'control'].map((kind) => exact(sum(rows, (k) => (k.phases || []).filter((p) => p.kind === kind).length)) + ' ' + kind);
      figure('phases-' + i, 'Data and control phases of ' + rows[0].kernel_name, counts.join(' and ') + ' phases (runs of operations of one kind: ' +
             'data moves payload, control only signals: atomics, NOPs, puts of at most 8 bytes); ' +
             exact(sum(rows, (k) => k.phases_dropped)) + ' phases past the analysis\'s limit not drawn.', {
        ...base,
        tooltip: {formatter: (p) => lanes[p.value[0]] + ', ' + p.seriesName + ': ' + exact(p.value[3]) + ' operations, ' + exact(p.value[4]) + ' bytes, ' +
                                    duration((p.value[2] - p.value[1]) * 1e6)},
        legend: {top: 0},
        dataZoom: [{type: 'inside', filterMode: 'weakFilter'}],
        grid: {left: 150, right: 30, top: 40, bottom: 50},
        xAxis: {type: 'value', name: 'ms', nameLocation: 'middle', nameGap: 30, scale: true},
        yAxis: {type: 'category', data: lanes, inverse: true},
        series: series,
      }, Math.max(260, 80 + 40 * lanes.length), true);
      figures[figures.length - 1].cells = sum(series, (x) => x.data.length);
    });
  }

  const ranges = (agg.nvtx_ranges || []).slice(0, 15);
  if (ranges.length) heading('NVTX ranges');
  if (ranges.length)
    figure('nvtx-ranges', 'NVTX ranges that took the most time', ranges.length + ' of ' + agg.nvtx_ranges.length + ' range names.', {
      ...base,
      grid: {left: 220, right: 40, top: 20, bottom: 40},
      xAxis: {type: 'value', name: 'ms'},
      yAxis: {type: 'category', inverse: true, data: ranges.map((r) => r.domain + ' / ' + r.name)},
      series: [{type: 'bar', data: ranges.map((r) => r.total_ns / 1e6)}],
    }, 60 + 26 * ranges.length, true);

  // ---- NCCL's calls (docs/nccl.md): each kind's network time, and its wire bytes against the algorithm's
  const calls = (agg.nccl_calls || []).slice().sort((a, b) => b.network_mean_ns * b.calls - a.network_mean_ns * a.calls);
  if (calls.length) {
    heading('NCCL calls');
    const name = (c) => c.func + ' ' + bytes(c.bytes) + (c.algorithm ? ' ' + c.algorithm + '/' + c.protocol : '');
    const top = calls.slice(0, 15);
    figure('nccl-calls', 'NCCL calls: network time per call', 'Mean and longest network part (the first work request posted for the call to its ' +
           'last completion, per rank) of the ' + top.length + ' kinds of call with the most network time in all.', {
      ...base,
      legend: {top: 0},
      grid: {left: 260, right: 40, top: 30, bottom: 40},
      xAxis: {type: 'value', name: 'µs'},
      yAxis: {type: 'category', inverse: true, data: top.map(name)},
      series: [{type: 'bar', name: 'mean', data: top.map((c) => c.network_mean_ns / 1e3)},
               {type: 'bar', name: 'longest', data: top.map((c) => c.network_max_ns / 1e3)}],
    }, 70 + 30 * top.length, true);
    root.append(table('nccl-calls', ['call', 'ranks', 'calls', 'WRs per call', 'wire bytes per call', 'wire / algorithm', 'network mean µs'],
                      calls.map((c) => [name(c), c.ranks, c.calls, Math.round(c.wrs / Math.max(1, c.calls) * 10) / 10,
                                        Math.round(c.wire_bytes / Math.max(1, c.calls)),
                                        c.wire_per_algorithm_byte === undefined ? '' : Math.round(c.wire_per_algorithm_byte * 1000) / 1000,
                                        Math.round(c.network_mean_ns / 100) / 10])));
  }

  // ---- changes from a baseline (report --baseline A: sigmatrace diff's JSON in agg.diff) -----
  const diff = agg.diff;
  if (diff) {
    heading('Changes from the baseline');
    grid.before(note(exact(diff.changes.length) + ' of ' + exact(diff.rows_compared) + ' rows compared changed from ' + diff.baseline +
                     ' (counts and bytes by more than ' + diff.count_threshold_percent + ' %, durations\' geometric means by more than ' + diff.threshold_percent +
                     ' % and ' + diff.min_z + ' standard errors); ' +
                     exact(diff.only_in_baseline.length) + ' rows only in the baseline, ' + exact(diff.only_in_experiment.length) + ' only here.'));
    const top = diff.changes.slice(0, 15);
    const first = (c) => c.changed[0];
    if (top.length)
      figure('diff-explains', 'What changed, by the time it explains', 'The ' + top.length + ' changes that explain the most time: the change of their ' +
             'operations\' summed durations, or of their bytes at their baseline rate (positive: slower or more).', {
        ...base,
        tooltip: {formatter: (p) => top[p.dataIndex].group + ' ' + top[p.dataIndex].key + ': ' + top[p.dataIndex].changed.join(', ') + ', ' + duration(Math.abs(p.value * 1e6))},
        grid: {left: 260, right: 40, top: 20, bottom: 40},
        xAxis: {type: 'value', name: 'ms'},
        yAxis: {type: 'category', inverse: true, data: top.map((c) => c.group + ' ' + c.key)},
        series: [{type: 'bar', data: top.map((c) => c.explains_ns / 1e6), itemStyle: {color: (p) => (p.value >= 0 ? '#c44e52' : '#55a868')}}],
      }, 60 + 26 * top.length, true);
    root.append(table('diff', ['group', 'row', 'changed', 'baseline', 'this run', 'change %', 'explains ns'],
                      diff.changes.map((c) => [c.group, c.key, c.changed.join(', '), c.a[first(c)] ?? 0, c.b[first(c)] ?? 0,
                                               c.change_percent === null ? 'new' : Math.round(c.change_percent * 10) / 10, Math.round(c.explains_ns)])));
  }

  // ---- processes, loss and coverage (after the figures) ------------------------------------
  section('Processes', table('processes', ['process', 'host', 'mode', 'ops', 'bytes out', 'bytes read', 'completions', 'errors', 'dropped'],
    procs.map((p) => [p.label, p.host, p.mode, p.ops, p.bytes_out, p.bytes_read, p.completions, p.errors, p.events_dropped])));

  const loss = [['events dropped by the recorders', agg.events_dropped], ['errors (calls, completions, async)', agg.errors],
                ['files skipped', (agg.skipped_files || []).length], ['damaged files', (agg.damage || []).length]];
  for (const d of agg.damage || []) loss.push(['  ' + d.file + ': bytes skipped', d.bytes_skipped]);
  loss.push(['events of unknown QPs', sum(procs, (p) => p.unknown_qp_events)], ['completions without their WR', sum(procs, (p) => p.unmatched_completions)]);
  const hij = procs.map((p) => p.gpu_doorbells).filter(Boolean);
  if (hij.length) loss.push(['doorbell pages not hijacked', sum(hij, (h) => h.pages_not_hijacked)], ['doorbell page map failures', sum(hij, (h) => h.map_failures)],
                            ['doorbells on unknown QPs', sum(hij, (h) => h.doorbells_on_unknown_qps)]);
  const rec = (agg.gpus || []).map((g) => g.wqe_recovery).filter(Boolean);
  if (rec.length) loss.push(['GPU WQEBBs lost (overwritten before read)', sum(rec, (r) => r.lost_wqebbs)], ['GPU WQEs damaged', sum(rec, (r) => r.damaged_wqes)],
                            ['GPU WQEBBs unreadable', sum(rec, (r) => r.unread_wqebbs)]);
  const nv = procs.map((p) => p.nvtx).filter(Boolean);
  if (nv.length) loss.push(['NVTX ranges not ended', sum(nv, (n) => n.not_ended)], ['NVTX payloads not decoded', sum(nv, (n) => n.undecoded_payloads)]);
  if (agg.timeline) loss.push(['timeline: events left out (window, layers, processes)', agg.timeline.events_left_out], ['timeline: events summarised (budget)', agg.timeline.events_summarised]);
  loss.push(['operations without a timestamp (in no time bin)', agg.series ? agg.series.untimed_ops : 0]);
  const cov = Object.entries(agg.coverage || {}).map(([k, v]) => [k, v.enabled_in, v.reported_by]);
  section('Loss and coverage', table('loss', ['what', 'count'], loss),
          table('coverage', ['provider', 'enabled in (processes)', 'reported by (processes)'], cov));
  for (const f of agg.skipped_files || []) root.append(note('skipped: ' + f));

  // ---- render ------------------------------------------------------------------------------
  for (const f of figures) {
    // SVG keeps every mark in the DOM (inspectable, exportable as is); a heatmap of thousands of
    // cells is drawn on a canvas instead, which stays fast.
    f.instance = echarts.init(f.chart, null, {renderer: f.cells > 4096 ? 'canvas' : 'svg'});
    f.instance.setOption(f.option);
  }
  window.addEventListener('resize', () => figures.forEach((f) => f.instance.resize()));
  root.setAttribute('data-figures', String(figures.length));
  if (!exporting) return;

  // The PNG is the SVG rasterised by the browser at twice its size: exactly the figure of the SVG
  // file (ECharts' own canvas renderer paints large figures over several frames).
  const rasterise = (svg, w, h) => new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => {
      const c = document.createElement('canvas');
      c.width = 2 * w, c.height = 2 * h;
      const g = c.getContext('2d');
      g.fillStyle = '#ffffff';
      g.fillRect(0, 0, c.width, c.height);
      g.drawImage(img, 0, 0, c.width, c.height);
      resolve(c.toDataURL('image/png'));
    };
    img.onerror = () => reject(new Error('the browser could not draw an SVG figure'));
    img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg);
  });
  const scratch = el('div', {style: 'position:absolute;left:-10000px;top:0'});
  document.body.append(scratch);
  const out = {};
  const done = figures.map((f) => {
    const w = 1000, h = Math.max(f.height, 380);
    const box = el('div', {style: 'width:' + w + 'px;height:' + h + 'px'});
    scratch.append(box);
    const chart = echarts.init(box, null, {renderer: 'svg', width: w, height: h});
    chart.setOption({...f.option, backgroundColor: '#ffffff'});
    const svg = chart.renderToSVGString();
    chart.dispose();
    return rasterise(svg, w, h).then((png) => { out[f.id] = {title: f.title, svg: svg, png: png}; });
  });
  // What --plots reads: written once every figure is in (an incomplete export has no element).
  Promise.all(done).then(() => document.body.append(el('pre', {id: 'sigmatrace-export'}, JSON.stringify(out))));
})();
