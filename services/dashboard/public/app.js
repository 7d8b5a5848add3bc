// The dashboard's entry: sign-in, the role of the key, and a hash router
// (#/approvals, #/jobs, #/jobs/ID). Each view owns its streams and stops them
// when another view takes over.
import { api, onUnauthorized, session, words } from './api.js';
import { approvalsView } from './approvals.js';
import { jobsListView } from './jobs.js';
import { jobView } from './job-page.js';
import { h, clear } from './dom.js';

const $ = (id) => document.getElementById(id);
let me = null;
let current = null;

function setConn(text) { $('conn').textContent = text; }
function setPending(n) {
  $('pending-count').hidden = n === null;
  $('pending-count').textContent = String(n ?? '');
  document.title = n ? `(${n}) ThinkFlow dashboard` : 'ThinkFlow dashboard';
}

function signOut(message) {
  current?.stop();
  current = null;
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
  if (!location.hash || location.hash === '#') location.hash = me.role === 'submitter' ? '#/jobs' : '#/approvals';
  route();
}

function route() {
  if (!me) return;
  current?.stop();
  const view = $('view');
  const ctx = { me, setConn, setPending };
  const m = /^#\/jobs\/(job_[A-Za-z0-9]+)$/.exec(location.hash);
  const name = m ? 'job' : location.hash.startsWith('#/jobs') ? 'jobs' : 'approvals';
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === (name === 'job' ? 'jobs' : name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  current = name === 'job' ? jobView(view, m[1], ctx) : name === 'jobs' ? jobsListView(view, ctx) : approvalsView(view, ctx);
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
