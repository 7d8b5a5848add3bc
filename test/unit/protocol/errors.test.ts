// PROTOCOL.md §3 and §7: every error code, their precedence, ids and what is inert.
import { describe, expect, it } from 'vitest';
import { TurnParser } from '../../../services/protocol/index.ts';
import { codes, feedDeltas, parse } from './helpers.ts';

describe('error codes (§3)', () => {
  it.each([
    ['unknown_tool', '<tf-delete id="1" path="a"/>'],
    ['missing_id', '<tf-mkdir path="a"/>'],
    ['bad_id', '<tf-mkdir id="1a" path="a"/>'],
    ['bad_id', '<tf-mkdir id="" path="a"/>'],
    ['bad_id', '<tf-mkdir id=" 1" path="a"/>'],
    ['missing_path', '<tf-mkdir id="1"/>'],
    ['missing_path', '<tf-read id="1"/>'],
    ['missing_dest', '<tf-copy id="1" path="a"/>'],
    ['missing_cmd', '<tf-bash id="1"/>'],
    ['unexpected_body', '<tf-touch id="1" path="a">x</tf-touch>'],
    ['bad_edit', '<tf-edit id="1" path="a">x</tf-edit>'],
    ['unclosed_tag', '<tf-write id="1" path="a">x'],
  ])('%s: %s', (code, doc) => {
    expect(codes(doc)).toEqual([code]);
  });

  it('duplicate_id within a stream, and the first one still runs', () => {
    const r = parse('<tf-mkdir id="1" path="a"/><tf-mkdir id="1" path="b"/>');
    expect(r.commands.map((c) => c.path)).toEqual(['a']);
    expect(r.errors).toMatchObject([{ code: 'duplicate_id', id: '1' }]);
  });

  it('too_large: body over the configured limit, counted in UTF-8 bytes', () => {
    expect(codes('<tf-write id="1" path="a">12345</tf-write>', { maxBodyBytes: 5 })).toEqual([]);
    expect(codes('<tf-write id="1" path="a">123456</tf-write>', { maxBodyBytes: 5 })).toEqual(['too_large']);
    expect(codes('<tf-write id="1" path="a">€€</tf-write>', { maxBodyBytes: 5 })).toEqual(['too_large']);
    // The dropped leading line break does not count.
    expect(codes('<tf-write id="1" path="a">\n12345</tf-write>', { maxBodyBytes: 5 })).toEqual([]);
    // For edit, everything between the tags counts.
    expect(codes('<tf-edit id="1" path="a"><old>x</old><new>y</new></tf-edit>', { maxBodyBytes: 23 })).toEqual(['too_large']);
    expect(codes('<tf-edit id="1" path="a"><old>x</old><new>y</new></tf-edit>', { maxBodyBytes: 24 })).toEqual([]);
  });

  it('too_large: the default body limit is 8 MiB', () => {
    const limit = 8 * 1024 * 1024;
    expect(codes(`<tf-write id="1" path="a">${'x'.repeat(limit)}</tf-write>`)).toEqual([]);
    expect(codes(`<tf-write id="1" path="a">${'x'.repeat(limit + 1)}</tf-write>`)).toEqual(['too_large']);
  });

  it('too_large: an opening tag over 64 KiB from < to > inclusive', () => {
    const fixed = '<tf-bash id="1" cmd=""/>'.length;
    const fits = `<tf-bash id="1" cmd="${'x'.repeat(65536 - fixed)}"/>`;
    expect(Buffer.byteLength(fits)).toBe(65536);
    expect(codes(fits)).toEqual([]);
    expect(codes(`<tf-bash id="1" cmd="${'x'.repeat(65537 - fixed)}"/>`)).toEqual(['too_large']);
    expect(codes(`<tf-bash id="1" cmd="${'é'.repeat(32768)}"/>`)).toEqual(['too_large']);
  });
});

describe('precedence and ids (§7)', () => {
  it.each([
    ['unknown_tool before bad_attribute', '<tf-nope id=x/>', 'unknown_tool'],
    ['bad_attribute before missing_id', '<tf-mkdir path="a" foo="b"/>', 'bad_attribute'],
    ['missing_id before missing_path', '<tf-mkdir/>', 'missing_id'],
    ['bad_id before missing_path', '<tf-mkdir id="x"/>', 'bad_id'],
    ['missing_path before unexpected_body', '<tf-mkdir id="1">text</tf-mkdir>', 'missing_path'],
    ['unexpected_body before too_large', '<tf-mkdir id="1" path="a">text text</tf-mkdir>', 'unexpected_body'],
    ['missing_path on an unclosed body', '<tf-write id="1">abc', 'missing_path'],
    ['unknown_tool on an unclosed body', '<tf-nope id="1">abc', 'unknown_tool'],
    ['too_large on an unclosed body past the limit', '<tf-write id="1" path="a">abcdefgh', 'too_large'],
    ['unclosed_tag only when the opening tag never completed', '<tf-nope id="1" foo', 'unclosed_tag'],
    ['unclosed_tag inside the name', '<tf-wri', 'unclosed_tag'],
    ['unclosed_tag inside a value', '<tf-write id="1" path="a', 'unclosed_tag'],
  ])('%s', (_name, doc, code) => {
    expect(codes(doc, { maxBodyBytes: 4 })).toEqual([code]);
  });

  it('bad_edit before too_large', () => {
    expect(codes('<tf-edit id="1" path="a">xxxxxxxxxx</tf-edit>', { maxBodyBytes: 4 })).toEqual(['bad_edit']);
  });

  it('an error carries the id when the tag had a well-formed one', () => {
    expect(parse('<tf-nope id="4"/>').errors[0]!.id).toBe('4');
    expect(parse('<tf-mkdir id="5" path="a" x="1"/>').errors[0]!.id).toBe('5');
    expect(parse('<tf-mkdir id="5x" path="a"/>').errors[0]!.id).toBeUndefined();
    expect(parse('<tf-write id="6" path="a">').errors[0]!.id).toBe('6');
  });

  it('a broken tag with a well-formed id uses the id up', () => {
    const r = parse('<tf-nope id="1"/><tf-mkdir id="1" path="a"/><tf-mkdir id="2" path="b" x="y"/><tf-mkdir id="2" path="c"/>');
    expect(r.commands).toEqual([]);
    expect(r.errors.map((e) => e.code)).toEqual(['unknown_tool', 'duplicate_id', 'bad_attribute', 'duplicate_id']);
  });

  it('parsing goes on after a broken tag, past its closing tag', () => {
    const r = parse('<tf-nope id="1">a <tf-mkdir id="2" path="x"/> b</tf-nope><tf-mkdir id="3" path="y"/>');
    expect(r.errors.map((e) => e.code)).toEqual(['unknown_tool']);
    expect(r.commands.map((c) => c.id)).toEqual(['3']);
  });

  it('ids are shared across streams; the tag completing later is the duplicate', () => {
    const { outputs } = feedDeltas(
      [
        ['reasoning', '<tf-write id="1" path="r">long'],
        ['text', '<tf-mkdir id="1" path="t"/>'],
        ['reasoning', ' body</tf-write>'],
      ],
      0,
    );
    expect(outputs.map((o) => [o.stream, o.type === 'command' ? o.command.id : o.error.code])).toEqual([
      ['text', '1'],
      ['reasoning', 'duplicate_id'],
    ]);
  });

  it('ids given as used before the turn (failed or skipped earlier) are duplicates', () => {
    const r = parse('<tf-mkdir id="3" path="a"/><tf-mkdir id="4" path="b"/>', { usedIds: ['3'] });
    expect(r.errors).toMatchObject([{ code: 'duplicate_id', id: '3' }]);
    expect(r.commands.map((c) => c.id)).toEqual(['4']);
  });

  it('tags in inert text use no ids', () => {
    const r = parse('`<tf-mkdir id="1" path="a"/>` <tf-mkdir id="1" path="b"/>');
    expect(r.errors).toEqual([]);
    expect(r.commands.map((c) => c.path)).toEqual(['b']);
  });
});

describe('inert text (§4)', () => {
  const tag = '<tf-mkdir id="1" path="a"/>';
  it.each([
    ['backtick fence', `\`\`\`\n${tag}\n\`\`\`\n`, 0],
    ['tilde fence', `~~~sh\n${tag}\n~~~\n`, 0],
    ['fence with three leading spaces', `   \`\`\`\n${tag}\n\`\`\``, 0],
    ['four spaces is no fence (a 3-backtick span ends at the line end)', `    \`\`\`\n${tag}`, 1],
    ['tab-indented is no fence', `\t\`\`\`\n${tag}`, 1],
    ['fence closed by a longer fence', `\`\`\`\n\`\`\`\`\n${tag}`, 1],
    ['not closed by a shorter fence', `\`\`\`\`\n\`\`\`\n${tag}`, 0],
    ['not closed by the other character', `\`\`\`\n~~~\n${tag}`, 0],
    ['not closed with text after', `\`\`\`\n\`\`\` x\n${tag}`, 0],
    ['closed with blanks after', `\`\`\`\n\`\`\` \t \n${tag}`, 1],
    ['closed with CRLF', `\`\`\`\r\n\`\`\`\r\n${tag}`, 1],
    ['fence must start its line', `a \`\`\`\n${tag}`, 1],
    ['fence after a command on its line is no fence', `${'<tf-mkdir id="2" path="b"/>'}\`\`\`\n${tag}`, 2],
    ['inline span', `\`${tag}\``, 0],
    ['double-backtick span with a single inside', `\`\` \` ${tag} \`\``, 0],
    ['span closes only with the same run length', `\`\` x \` ${tag}`, 0],
    ['span ends at the line end', `\` x\n${tag}`, 1],
    ['after a closed span', `\`x\` ${tag}`, 1],
    ['tilde run inside a line is text', `a ~~~\n${tag}`, 1],
    ['short tilde run at line start is text', `~~\n${tag}`, 1],
  ])('%s', (_name, doc, count) => {
    const r = parse(doc);
    expect(r.errors).toEqual([]);
    expect(r.commands).toHaveLength(count);
  });

  it('command bodies are never inert: backticks inside them do not open spans', () => {
    const r = parse('<tf-write id="1" path="a">```\n`</tf-write><tf-mkdir id="2" path="b"/>');
    expect(r.commands.map((c) => c.id)).toEqual(['1', '2']);
  });
});

describe('visible text (§4)', () => {
  it.each([
    ['removes exactly the block', 'a\n<tf-mkdir id="1" path="x"/>\nb', 'a\n\nb'],
    ['removes broken blocks too', 'a<tf-nope id="1">x</tf-nope>b', 'ab'],
    ['removes an unclosed tag to the end', 'a<tf-write id="1" path="x">body', 'a'],
    ['removes an unfinished opening tag to the end', 'a<tf-write id="1" pa', 'a'],
    ['keeps inert tags', '`<tf-mkdir id="1" path="x"/>`', '`<tf-mkdir id="1" path="x"/>`'],
    ['keeps non-protocol angle brackets', 'a < b <tf <tf-', 'a < b <tf <tf-'],
    ['trims nothing else', '  x  <tf-touch id="1" path="y"/>  \n', '  x    \n'],
  ])('%s', (_name, doc, visible) => {
    expect(parse(doc).visible).toBe(visible);
  });

  it('only the text stream is visible', () => {
    const r = feedDeltas([['reasoning', 'thinking <tf-mkdir id="1" path="a"/>'], ['text', 'hello']], 0);
    expect(r.visible).toBe('hello');
  });
});

describe('chunking (§4)', () => {
  it('splits inside a multi-byte character give the same result', () => {
    const doc = 'é <tf-write id="1" path="ü/€.txt">\n😀 and 中文\n</tf-write> ✓';
    const whole = feedDeltas([['text', doc]], 0);
    for (let size = 1; size <= 7; size++) expect(feedDeltas([['text', doc]], size)).toEqual(whole);
    expect(whole.outputs).toHaveLength(1);
    expect(whole.visible).toBe('é  ✓');
  });

  it('a split \\r\\n after the opening tag is still dropped', () => {
    const r = feedDeltas([['text', '<tf-write id="1" path="a">\r'], ['text', '\nx</tf-write>']], 0);
    expect(r.outputs[0]).toMatchObject({ command: { content: 'x' } });
  });

  it('nothing is emitted before the final > of the closing tag', () => {
    const doc = '<tf-write id="1" path="a">x</tf-write>';
    let seen = -1;
    const parser = new TurnParser();
    for (let i = 0; i < doc.length; i++) if (parser.feed('text', doc[i]!).length > 0) seen = i;
    expect(seen).toBe(doc.length - 1);
  });
});
