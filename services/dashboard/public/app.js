// The dashboard's entry: sign-in, the role of the key, and a hash router
// (#/approvals, #/decided, #/jobs, #/jobs/ID). Each view owns its streams and stops them
// when another view takes over; an operator's pending approvals (live.js)
// stay live across views, for the count in the title and navigation, the
// alerts and the outage banner.
import { api, connectionWords, onUnauthorized, session, words } from './api.js';
import { approvalsView } from './approvals.js';
import { jobsListView } from './jobs.js';
import { jobView } from './job-page.js';
import { decidedView } from './decided.js';
import { h, clear } from './dom.js';
import { pendingStore } from './live.js';
import { alertsControl } from './alerts.js';
import { forgetLinks, linkStatus } from './outage.js';

const $ = (id) => document.getElementById(id);
let me = null;
let current = null;
/** the signed-in operator's pending approvals and alerts; null for a submitter */
let live = null;
let alerts = null;
/** the name under which the current view's own stream reports to the outage banner */
let viewLink = null;

function setConn(text) { $('conn').textContent = text; }
/** A view's own stream: its state in the connection line, and in the outage banner while it is down. */
function setLink(label, s) {
  setConn(connectionWords(label, s));
  if (viewLink && viewLink !== label) linkStatus(viewLink, null);
  viewLink = label;
  linkStatus(label, s);
}
function setPending(n) {
  $('pending-count').hidden = n === null;
  $('pending-count').textContent = String(n ?? '');
  document.title = n ? `(${n}) ThinkFlow dashboard` : 'ThinkFlow dashboard';
}

/** Keeps the approvals stream for the whole sign-in; alerts only for requests that arrive after the page loaded. */
function startLive() {
  live = pendingStore();
  alerts = alertsControl($('alerts'), { onOpen: () => { location.hash = '#/approvals'; } });
  let seen = new Set();
  live.subscribe((type, data) => {
    if (type === 'status') linkStatus('Approvals', data);
    else if (type === 'requested' && !seen.has(data.token)) { seen.add(data.token); alerts.announce(data); }
    else if (type === 'snapshot') {
      // After a reconnect, requests that arrived during the outage are new too.
      if (!data.first) for (const a of data.approvals) if (!seen.has(a.token)) alerts.announce(a);
      seen = new Set(data.approvals.map((a) => a.token));
    } else if (type === 'resolved') seen.delete(data.token);
    setPending(live.loaded ? live.count : null);
  });
}

function stopLive() {
  live?.stop();
  alerts?.stop();
  live = null;
  alerts = null;
  setPending(null);
  forgetLinks();
}

function signOut(message) {
  current?.stop();
  current = null;
  stopLive();
  session.clear();
  me = null;
  $('nav').hidden = true;
  $('who').hidden = true;
  $('signin').hidden = false;
  clear($('view'));
  setConn('');
  $('signin-error').textContent = message ?? '';
  $('key').focus();
}

async function signIn(key) {
  session.set(key);
  try {
    me = await api('/v1/whoami');
  } catch (err) {
    signOut(words(err));
    return;
  }
  $('signin').hidden = true;
  $('nav').hidden = false;
  $('who').hidden = false;
  clear($('who'), `Signed in as ${me.name} (${me.role}) `,
    h('button', { type: 'button', class: 'link', id: 'signout', onclick: () => signOut('Signed out.') }, 'Sign out'));
  const decides = me.role === 'operator' || me.role === 'admin';
  // Submitters cannot decide: no Approvals link, no count, no stream.
  for (const a of document.querySelectorAll('[data-nav="approvals"], [data-nav="decided"]')) a.hidden = !decides;
  if (decides && !live) startLive();
  if (!location.hash || location.hash === '#') location.hash = me.role === 'submitter' ? '#/jobs' : '#/approvals';
  route();
}

function route() {
  if (!me) return;
  current?.stop();
  if (viewLink) linkStatus(viewLink, null);
  viewLink = null;
  setConn('');
  const view = $('view');
  const ctx = { me, setConn, setLink, live };
  const m = /^#\/jobs\/(job_[A-Za-z0-9]+)$/.exec(location.hash);
  const name = m ? 'job' : location.hash.startsWith('#/jobs') ? 'jobs' : location.hash.startsWith('#/decided') ? 'decided' : 'approvals';
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === (name === 'job' ? 'jobs' : name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const views = { job: () => jobView(view, m[1], ctx), jobs: () => jobsListView(view, ctx), decided: () => decidedView(view, ctx), approvals: () => approvalsView(view, ctx) };
  current = views[name]();
  $('main').focus({ preventScroll: true });
}

onUnauthorized.add(() => signOut('The API key was not accepted: it is unknown, mistyped or no longer configured. Sign in again with a valid key.'));
window.addEventListener('hashchange', route);
$('signin-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const key = $('key').value.trim();
  $('key').value = '';
  if (key) signIn(key);
});
if (session.key) signIn(session.key);
else $('key').focus();
