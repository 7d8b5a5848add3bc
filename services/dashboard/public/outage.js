// The warning shown while a live connection is down: the operator must know
// that what the page shows may be out of date, and that deciding is paused
// until the current state is loaded again. Each stream reports under its own
// name; the banner lists every one that is down.
import { clear, h } from './dom.js';

const down = new Map(); // name -> status while reconnecting

// An empty alert region takes no room (style.css); text put into it is announced once per change.
function render() {
  const el = document.getElementById('outage');
  if (!el) return;
  const names = [...down.keys()].join(', ');
  if (el.dataset.names === names) return;
  el.dataset.names = names;
  if (!names) { clear(el); return; }
  clear(el, h('strong', {}, 'Live connection lost'), ` (${names}): reconnecting. `,
    'What is shown may be out of date; deciding is paused until the current state is loaded again.');
}

/** A stream's status (api.js stream onStatus); `null` when the stream is gone (its view left). */
export function linkStatus(name, s) {
  if (s && s.state === 'reconnecting') down.set(name, s);
  else down.delete(name);
  render();
}

export function forgetLinks() {
  down.clear();
  render();
}
