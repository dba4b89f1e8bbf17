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
    if (msg && msg.light) {
      steer(msg.light);
      return;
    }
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
  const plotsShown = () => {
    const gd = plotOf("loss");
    return !!gd && gd.offsetParent !== null;
  };
  live.view = () => ({ full: live.full, rows: live.rows, shown: plotsShown(), light: true });
  window.ldLive = live;

  // The light look. While a run trains, the page itself asks the app for the plots' new points and the status
  // line (the ``look`` endpoint, a plain fetch): a gradio event costs the page 0.1-0.3 s of CPU in gradio's own
  // bookkeeping whatever it brings, the look about a millisecond. The full poll (samples, alerts, warnings,
  // verdict, buttons) runs only when the look sees one of those move, and on a slow timer as a back-up.
  const light = { on: false, lang: null, held: null, moved: null, timer: null, busy: false, again: false };
  const lookUrl = () => {
    const root = (window.gradio_config && window.gradio_config.root) || "";
    return root ? `${root.replace(/\/$/, "")}/gradio_api/run/look` : new URL("gradio_api/run/look", document.baseURI).href;
  };
  function lookView() {
    const held = light.held || {};
    const view = { lang: light.lang, shown: plotsShown(), run: held.run, active: held.active };
    // the plots: what the page holds, if it still holds what the last look left (else whole figures come)
    if (held.full === live.full && held.rows === live.rows) Object.assign(view, held);
    else view.full = live.full || 0;
    view.lang = light.lang;
    view.shown = plotsShown();
    // the status: the box may have been drawn again from gradio's value since
    const box = document.querySelector("#ld-status .ld-status-line");
    if (!box || box.dataset.hash !== held.status_hash) view.status_hash = null;
    return view;
  }
  async function look() {
    if (light.timer !== null) clearTimeout(light.timer);
    light.timer = null;
    // a hidden tab does not look (gradio's timer does not tick either): showing it looks at once
    if (!light.on || document.visibilityState !== "visible") return;
    if (light.busy) { // asked for while a look is on its way: what that one brings may be from before (a run started)
      light.again = true;
      return;
    }
    light.busy = true;
    light.again = false;
    let out = null;
    try {
      const reply = await fetch(lookUrl(), { method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ data: [lookView()] }) });
      if (reply.ok) out = (await reply.json()).data[0];
    } catch (e) { out = null; }
    light.busy = false;
    if (!out) { // the app is away or restarting: look again later
      light.timer = setTimeout(look, 10000);
      return;
    }
    light.held = out.held;
    const box = document.querySelector("#ld-status .ld-status-line");
    if (out.status && box) {
      box.innerHTML = out.status.html;
      box.dataset.hash = out.status.hash;
    }
    if (out.plots) live.apply(out.plots);
    const moved = JSON.stringify(out.moved);
    if (light.moved !== null && moved !== light.moved) {
      const button = document.querySelector("#ld-poll-now");
      if (button) button.click();
    }
    light.moved = moved;
    if (light.again) look(); // look once more, now: never stop on a reply older than the request
    else if (out.every === null || out.every === undefined) light.on = false;
    else light.timer = setTimeout(look, out.every * 1000);
  }
  // the full poll's word: the page's language, and whether a run trains (the look starts, or looks once more)
  function steer(msg) {
    const lang = msg.lang;
    const changed = lang !== light.lang;
    const seen = light.moved;
    light.lang = lang;
    light.moved = JSON.stringify(msg.moved); // what the full poll just brought
    if (light.on) {
      if (changed) look();
    } else if (msg.active || !light.held || changed || light.held.active || light.moved !== seen) {
      // a run trains; or once, for the plots' figures (a first look, another language, a run that ended
      // between two looks, or one that started and ended between them: a short run continued from a
      // checkpoint near its end): a look with no run training says to stop
      light.on = true;
      look();
    }
  }
  live.lookNow = () => { if (light.on) look(); };

  document.addEventListener("visibilitychange", () => {
    schedule();
    if (document.visibilityState === "visible" && light.timer === null) live.lookNow();
  });
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
