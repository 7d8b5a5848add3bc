import { describe, expect, it } from 'vitest';
import { newApprovalToken } from '../../../services/pipeline/approvals.ts';

// A token that starts with `-` is read as an option by `thinkflow approve
// TOKEN` (exit 2): with plain base64url, 1 token in 64 did. 5,000 draws would
// have met one with probability 1 - (63/64)^5000, indistinguishable from 1.
describe('approval tokens', () => {
  it('are 256-bit base64url and never start with a dash', () => {
    const tokens = Array.from({ length: 5000 }, newApprovalToken);
    for (const t of tokens) expect(t).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
