import { describe, expect, it } from 'vitest';
import { redactedUrl } from '../../../services/jobs/webhooks.ts';

describe('webhook URLs in logs', () => {
  it('keep scheme, host and path; drop the query and credentials that may hold a token', () => {
    expect(redactedUrl('https://user:pw@hooks.example.test:8443/t/abc?token=s3cret&x=1')).toBe('https://hooks.example.test:8443/t/abc?…');
    expect(redactedUrl('http://127.0.0.1:9/hook')).toBe('http://127.0.0.1:9/hook');
    expect(redactedUrl('nope')).toMatch(/^\(not a URL/);
  });
});
