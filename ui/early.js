(() => {
  // Runs in the page's <head>, before gradio's own scripts (ui/early.py). gradio's StatusTracker times a pending
  // event in a requestAnimationFrame loop that ends when the event's status changes; the loading screen's
  // tracker is removed while still pending, so its loop never ends: a frame every 16 ms while the page is open,
  // with nothing to show (about 80 ms of the browser's CPU a second on an idle page). A tracker's timing frame is
  // not requested while no tracker on the page is pending (showing its progress); a pending one times as before.
  const requestFrame = window.requestAnimationFrame.bind(window);
  const pending = () => document.querySelector('[data-testid="status-tracker"] .progress-text') !== null;
  // the tracker's loop: a callback that reads the clock, requested from gradio's status tracker module
  const trackerClock = (callback) =>
    /performance\.now\(\)/.test(String(callback)) && /statustracker/.test(new Error().stack || "");
  window.requestAnimationFrame = function (callback) {
    if (!pending() && trackerClock(callback)) return 0;
    return requestFrame(callback);
  };
})();
