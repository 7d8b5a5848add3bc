import { describe, expect, it } from 'vitest';
import { docApp } from './doc-app.ts';

// Requests refused before any handler runs: the route's schemas (checked by
// @hono/zod-openapi) answer in the API's one error shape, word for word as
// API.md clients have always seen it. No Redis or Docker is reached.

const app = docApp();
const loopback = { incoming: { socket: { remoteAddress: '127.0.0.1' } } };
const send = async (method: string, path: string, body?: string, type: string | null = 'application/json') => {
  const headers: Record<string, string> = type ? { 'content-type': type } : {};
  // bytes, not a string: a string body would get a content type of its own
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body: new TextEncoder().encode(body) }) }, loopback);
  return [res.status, await res.json()];
};
const error = (code: string, message: string, details: unknown = null) => ({ error: { code, message, details } });
const schemaError = (where: 'body' | 'query', details: { path: string; message: string }[]) =>
  error(where === 'body' ? 'invalid_body' : 'invalid_query', `${where} does not match the schema`, details);

describe('request validation (the error shape of API.md)', () => {
  it('a JSON body: bad JSON 400 invalid_json, another content type 415, unknown or bad fields 400 invalid_body naming the field', async () => {
    expect(await send('POST', '/v1/sessions', '{"project":')).toEqual([400, error('invalid_json', 'body is not valid JSON: Unexpected end of JSON input')]);
    expect(await send('POST', '/v1/sessions', '{}', 'text/plain')).toEqual([415, error('unsupported_media_type', 'expected application/json, got text/plain')]);
    expect(await send('POST', '/v1/sessions', '{"nope":1}')).toEqual([400, schemaError('body', [{ path: '(root)', message: 'Unrecognized key: "nope"' }])]);
    expect(await send('POST', '/v1/sessions', '{"nope":1}', null)).toEqual([400, schemaError('body', [{ path: '(root)', message: 'Unrecognized key: "nope"' }])]);
    expect(await send('POST', '/v1/sessions', '{"approval":"sometimes"}')).toEqual([400, schemaError('body', [{ path: 'approval', message: 'Invalid option: expected one of "never"|"on-request"' }])]);
    expect(await send('POST', '/v1/jobs', '{"task":"x","limits":{"max_turns":0}}')).toEqual([400, schemaError('body', [{ path: 'limits.max_turns', message: 'Too small: expected number to be >=1' }])]);
    expect(await send('POST', '/v1/approvals/t', '{"decision":"expired"}')).toEqual([400, schemaError('body', [{ path: 'decision', message: 'Invalid option: expected one of "approve"|"approve_for_session"|"approve_edited"|"reject"' }])]);
    expect(await send('POST', '/v1/approvals/t', '')).toEqual([400, error('invalid_json', 'body is not valid JSON: Unexpected end of JSON input')]);
  });

  it('file paths of a body stay in the workspace: 400 invalid_files naming each', async () => {
    expect(await send('POST', '/v1/jobs', '{"task":"x","files":{"../x":"y"}}')).toEqual([400, error('invalid_files', 'file paths must stay inside the workspace', [
      { path: '../x', reason: 'path_outside_workspace: "../x" resolves outside /workspace' },
    ])]);
  });

  it('a query: 400 invalid_query, in the schema\'s words or the limit\'s', async () => {
    expect(await send('GET', '/v1/approvals?status=done')).toEqual([400, schemaError('query', [{ path: 'status', message: 'Invalid option: expected one of "pending"|"decided"|"expired"|"all"' }])]);
    expect(await send('GET', '/v1/approvals?status=all&since=yesterday')).toEqual([400, schemaError('query', [{ path: 'since', message: 'Invalid ISO datetime' }])]);
    expect(await send('GET', '/v1/approvals?job_id=')).toEqual([400, schemaError('query', [{ path: 'job_id', message: 'Too small: expected string to have >=1 characters' }])]);
    expect(await send('GET', '/v1/approvals?status=pending&x=1')).toEqual([400, schemaError('query', [{ path: '(root)', message: 'Unrecognized key: "x"' }])]);
    expect(await send('GET', '/v1/jobs?limit=0')).toEqual([400, error('invalid_query', "limit must be a whole number from 1 to 500, got '0'")]);
    expect(await send('GET', '/admin/queues?limit=abc')).toEqual([400, error('invalid_query', "limit must be a whole number from 1 to 500, got 'abc'")]);
  });
});
