() => {
  // The Train step's live plots, kept by the page. The poll sends whole figures once (a first look, a new run
  // or language, or after many points) and otherwise only the new points, which are appended here to the
  // figures the page holds and drawn on the same plots. gradio's Plot component instead makes a new plot for
  // every new value and never purges the old one, whose window "resize" listener (plotly's `responsive`) keeps
  // it alive: hundreds of detached nodes per figure per poll.
  const PLOTS = { loss: "ld-loss", grad: "ld-grad", lr: "ld-lr", scale: "ld-scale" };
  // A redraw costs plotly the whole figure (tens of ms for four), whatever was added: the plots are drawn at
  // most once every 3 s and with at most this share of the page's time, so on a busy machine they draw less
  // often, never more work (bench/bench_watch.py: redrawing every second left 0.83 of the closed-tab throughput).
  const MIN_GAP_MS = 3000;
  const TIME_SHARE = 0.01;
  const live = { full: null, rows: 0, figs: {} }; // figs[name] = {data, layout, gd, stale}
  let nextDraw = 0;
  // plotly recomputes the axes only when layout.datarevision differs from the drawn one's, so it counts every
  // draw of the page: a whole figure's own count would start again at 1 and could equal the one it replaces,
  // and its points would show on the old axes
  let revision = 0;
  let pending = null;

  const plotOf = (name) => document.querySelector(`#${PLOTS[name]} .js-plotly-plot`);
  // drawn, and not collapsed: a plot 0 px high (whatever did it) is drawn again
  const drawn = (fig, gd) => !!gd && fig.gd === gd && gd.isConnected && gd.data === fig.data && !fig.stale &&
    gd.clientHeight > 0;

  // A line of one point draws nothing: until its second point it is drawn as a marker
  const single = new WeakSet();
  function markLonePoints(fig) {
    for (const trace of fig.data) {
      const lone = (trace.x || []).length === 1;
      if (lone && trace.mode === "lines") {
        trace.mode = "lines+markers";
        single.add(trace);
      } else if (!lone && single.has(trace)) {
        trace.mode = "lines";
        single.delete(trace);
      }
    }
  }

  // A line's first point alone would get plotly's padding around it (steps from -0.5, a loss from -1): until a
  // second step arrives the axes run from 0 to about twice the point (a decade either side on a log axis).
  function fitOneStep(fig) {
    const xs = new Set();
    const ys = [];
    for (const trace of fig.data) {
      (trace.x || []).forEach((x, i) => {
        xs.add(x);
        const y = (trace.y || [])[i];
        if (typeof y === "number" && isFinite(y)) ys.push(y);
      });
    }
    const { xaxis, yaxis } = fig.layout;
    if (xs.size === 1 && ys.length) {
      const x = [...xs][0];
      const top = Math.max(...ys);
      xaxis.range = [0, Math.max(2, 2 * x)];
      yaxis.range = yaxis.type === "log" ? [Math.log10(top) - 1, Math.log10(top) + 1] : [0, top > 0 ? 2 * top : 1];
      xaxis.autorange = yaxis.autorange = false;
      fig.oneStep = true;
    } else if (fig.oneStep) { // the second step: plotly's own ranges again (a user's zoom is left alone)
      delete xaxis.range;
      delete yaxis.range;
      xaxis.autorange = yaxis.autorange = true;
      fig.oneStep = false;
    }
  }

  function draw(name) {
    const fig = live.figs[name];
    const gd = plotOf(name);
    // a hidden Train step (or tab) draws nothing: the figure waits here and is drawn once on showing
    if (!fig || !gd || !window.Plotly || gd.offsetParent === null || drawn(fig, gd)) return;
    markLonePoints(fig);
    fitOneStep(fig);
    fig.layout.datarevision = ++revision; // its arrays may have grown in place
    // plotly's resize (a window resized, a full-page screenshot, gradio's own mount) deletes the layout's height;
    // with `responsive` a plot without one is made 100 % of its div's height, which is its own content: 0 px.
    // The figure's height is put back before every draw, and the CSS gives the div that height too (ui/app.py).
    if (fig.height) fig.layout.height = fig.height;
    fig.layout.autosize = true;
    window.Plotly.react(gd, fig.data, fig.layout, { responsive: true });
    fig.gd = gd;
    fig.stale = false;
  }

  function drawAll() {
    pending = null;
    if (document.visibilityState !== "visible") return; // showing the tab calls again
    const start = performance.now();
    for (const name in live.figs) draw(name);
    nextDraw = performance.now() + Math.max(MIN_GAP_MS, (performance.now() - start) / TIME_SHARE);
  }

  // No wait for the throttle: whole figures (a new run, a redraw) and a run that paused or ended show at once
  function drawNext() {
    if (pending !== null) clearTimeout(pending);
    pending = null;
    nextDraw = 0;
  }

  // A plot gradio made (the step shown for the first time, or re-rendered) gets the page's figure at once, not
  // after the throttle: until then it shows the Plot component's own value, a placeholder without words (it is
  // every tab's, whatever its language). The throttle is for drawing new points on plots already drawn.
  function drawNew() {
    if (document.visibilityState !== "visible") return;
    for (const name in live.figs) {
      const gd = plotOf(name);
      if (gd && live.figs[name].gd !== gd) draw(name);
    }
  }

  function schedule() {
    drawNew();
    if (pending === null) pending = setTimeout(drawAll, Math.max(0, nextDraw - performance.now()));
  }

  // One poll's message (the same one may come twice: a poll with nothing new leaves the channel as it was).
  live.apply = (msg) => {
    if (msg && msg.settle) drawNext(); // the run paused or ended: no more points are coming
    if (msg && msg.figures && msg.full !== live.full) {
      live.full = msg.full;
      live.rows = msg.rows;
      for (const [name, fig] of Object.entries(msg.figures)) {
        live.figs[name] = { data: fig.data, layout: fig.layout, height: fig.layout.height };
      }
      drawNext();
    } else if (msg && msg.y && msg.full === live.full && msg.from === live.rows) {
      for (const [name, lines] of Object.entries(msg.y)) {
        const fig = live.figs[name];
        if (!fig) continue;
        lines.forEach((ys, i) => {
          fig.data[i].x.push(...msg.x);
          fig.data[i].y.push(...ys);
        });
        fig.stale = fig.stale || lines.length > 0;
      }
      live.rows = msg.rows;
    } // else: had it already, or missed one before it; the next poll says what this page holds and gets it whole
    schedule(); // also draws a plot that was hidden and now shows, or that gradio re-created
  };
  // What this page holds, sent with every poll, and whether its plots are shown (else it polls slowly).
  live.view = () => {
    const gd = plotOf("loss");
    return { full: live.full, rows: live.rows, shown: !!gd && gd.offsetParent !== null };
  };
  window.ldLive = live;

  document.addEventListener("visibilitychange", schedule);
  // Any plot gradio drops (a Plot component given a new value, a step re-rendered) is purged, which removes its
  // resize listener and lets it go; one it draws into a live plot's box is given the page's figure (drawNew).
  new MutationObserver((records) => {
    if (!window.Plotly) return;
    let made = false;
    for (const record of records) {
      for (const node of record.removedNodes) {
        if (node.nodeType !== 1) continue;
        const plots = node.classList.contains("js-plotly-plot") ? [node] : node.querySelectorAll(".js-plotly-plot");
        for (const gd of plots) if (!gd.isConnected) window.Plotly.purge(gd);
      }
      made = made || (record.addedNodes.length > 0 && !!record.target.closest?.(".ld-live-plot"));
    }
    if (made) drawNew();
  }).observe(document.body, { childList: true, subtree: true });
}
