// Optional alerts for new approval requests: a short sound (made with
// WebAudio, no file fetched) and a desktop notification. Both are off until
// the operator turns them on; the choice is kept per browser (localStorage).
// The browser's notification permission is asked only on that click, never
// on load, and requests already pending when the page loads raise nothing.
import { h, clear } from './dom.js';

const STORE = 'thinkflow.alerts';

function load() {
  try {
    const v = JSON.parse(localStorage.getItem(STORE) ?? '{}');
    return { sound: v.sound === true, notify: v.notify === true };
  } catch (err) {
    console.error('alert settings unreadable; both stay off', err);
    return { sound: false, notify: false };
  }
}

const canNotify = () => typeof Notification === 'function';

/** A two-tone chime, about 0.3 s, generated on the spot. */
function chime(ctx) {
  const t = ctx.currentTime;
  const gain = ctx.createGain();
  gain.connect(ctx.destination);
  gain.gain.setValueAtTime(0.0001, t);
  gain.gain.exponentialRampToValueAtTime(0.2, t + 0.02);
  gain.gain.exponentialRampToValueAtTime(0.0001, t + 0.32);
  [880, 1320].forEach((hz, i) => {
    const osc = ctx.createOscillator();
    osc.type = 'sine';
    osc.frequency.setValueAtTime(hz, t + i * 0.12);
    osc.connect(gain);
    osc.start(t + i * 0.12);
    osc.stop(t + 0.32);
  });
}

/**
 * Renders the two switches into `root` and returns `announce(card)` for a
 * new request and `stop()`.
 */
export function alertsControl(root, { onOpen }) {
  const settings = load();
  let audio = null;
  const note = h('span', { class: 'muted small', role: 'status' });
  const save = () => localStorage.setItem(STORE, JSON.stringify(settings));
  // An AudioContext may only start after a gesture: it is made on the click that turns sound on.
  const ensureAudio = () => {
    if (!audio && typeof AudioContext === 'function') audio = new AudioContext();
    audio?.resume().catch((err) => console.error('sound could not start', err));
  };
  const sound = h('input', { type: 'checkbox', id: 'alert-sound', checked: settings.sound, onchange: () => {
    settings.sound = sound.checked;
    save();
    if (settings.sound) { ensureAudio(); if (audio) chime(audio); }
  } });
  const notify = h('input', { type: 'checkbox', id: 'alert-notify', checked: settings.notify && canNotify(), disabled: !canNotify(), onchange: async () => {
    settings.notify = notify.checked;
    note.textContent = '';
    if (settings.notify && Notification.permission === 'default') await Notification.requestPermission();
    if (settings.notify && Notification.permission !== 'granted') {
      settings.notify = false;
      notify.checked = false;
      note.textContent = 'Desktop notifications are blocked for this page in the browser settings.';
    }
    save();
  } });
  // Sound kept on from an earlier visit starts with the operator's first click or key on the page.
  const wake = () => { if (settings.sound) ensureAudio(); };
  document.addEventListener('pointerdown', wake, { once: true });
  document.addEventListener('keydown', wake, { once: true });
  clear(root,
    h('label', { for: 'alert-sound' }, sound, ' Sound'),
    h('label', { for: 'alert-notify' }, notify, ' Desktop notifications'), note);
  root.hidden = false;

  return {
    /** A request that arrived while the page was open. */
    announce(card) {
      if (settings.sound && audio) {
        try { chime(audio); } catch (err) { console.error('sound failed', err); }
      }
      if (!settings.notify || !canNotify() || Notification.permission !== 'granted') return;
      const where = card.job_id ? `job ${card.job_id}` : `session ${card.session_id}`;
      const n = new Notification('ThinkFlow: approval requested', { body: `${card.tool} ${card.target}\n${where}`, tag: card.token });
      n.onclick = () => { window.focus(); onOpen(card); n.close(); };
    },
    stop() {
      document.removeEventListener('pointerdown', wake);
      document.removeEventListener('keydown', wake);
      audio?.close().catch((err) => console.error('sound could not stop', err));
      clear(root);
      root.hidden = true;
    },
  };
}
