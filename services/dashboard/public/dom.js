// DOM helpers. Everything shown comes from agents and operators, so text is
// only ever set as text (never parsed as HTML).

/** h('p', {class: 'x', onclick: fn}, 'text', child) → element */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** "3 min ago", "2 h ago" from an ISO time. */
export function age(iso, now = Date.now()) {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** mm:ss from milliseconds (0 floor). */
export function clock(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** A local time people can read, with its zone ("14:03:07 UTC"), and the date when it is not today. */
export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const sameDay = d.toDateString() === new Date().toDateString();
  // Operators in several zones compare times: a bare "14:03" is ambiguous.
  return sameDay ? d.toLocaleTimeString(undefined, { timeZoneName: 'short' }) : d.toLocaleString(undefined, { timeZoneName: 'short' });
}

const toastEl = () => document.getElementById('toast');
let toastTimer;
/** A short message in the page's polite live region. */
export function toast(text) {
  const el = toastEl();
  el.textContent = text;
  el.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove('show'), 6000);
}
