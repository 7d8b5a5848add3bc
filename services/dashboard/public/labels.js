// The one place where the API's enum values become words on the page
// (`awaiting_approval` → "awaiting approval"): statuses of jobs and ledger
// records, approval decisions, job error codes. CSS classes and data
// attributes keep the raw values; only the text people read comes from here.

const WORDS = {
  // job and ledger statuses
  awaiting_approval: 'awaiting approval',
  // approval decisions, as what happened to the command
  approve: 'approved',
  approve_for_session: 'approved for session',
  approve_edited: 'approved with an edit',
  reject: 'rejected',
  expired: 'expired (no answer in time)',
  pending: 'pending',
  // what a ledger filter offers
  all: 'all',
};

/** Words for an enum value; an unknown one still reads as words (underscores become spaces). */
export function label(value) {
  if (value === null || value === undefined || value === '') return '';
  const v = String(value);
  return WORDS[v] ?? v.replace(/_/g, ' ');
}
