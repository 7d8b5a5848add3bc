// PROTOCOL.md §1–§2: tag syntax, attributes, bodies, the eight tools.
import { describe, expect, it } from 'vitest';
import { codes, parse } from './helpers.ts';

describe('tag syntax (§1)', () => {
  it.each([
    ['drops exactly one leading \\n', '<tf-write id="1" path="a">\nhi\n</tf-write>', 'hi\n'],
    ['drops a leading \\r\\n', '<tf-write id="1" path="a">\r\nhi</tf-write>', 'hi'],
    ['keeps a second line break', '<tf-write id="1" path="a">\n\nhi</tf-write>', '\nhi'],
    ['keeps a lone \\r followed by text', '<tf-write id="1" path="a">\rhi</tf-write>', '\rhi'],
    ['keeps content without a leading break', '<tf-write id="1" path="a">hi</tf-write>', 'hi'],
    ['does not decode entities in bodies', '<tf-write id="1" path="a">&lt;b&gt; &amp;</tf-write>', '&lt;b&gt; &amp;'],
    ['ends at the first closing tag of the same name', '<tf-write id="1" path="a">x</tf-append></tf-write>', 'x</tf-append>'],
    ['keeps a near-miss closing tag as content', '<tf-write id="1" path="a"></tf-writ</tf-write>', '</tf-writ'],
    ['keeps tags inside bodies raw', '<tf-write id="1" path="a"><tf-mkdir id="2" path="b"/></tf-write>', '<tf-mkdir id="2" path="b"/>'],
  ])('%s', (_name, doc, content) => {
    const { commands, errors } = parse(doc);
    expect(errors).toEqual([]);
    expect(commands).toHaveLength(1);
    expect(commands[0]!.content).toBe(content);
  });

  it('accepts whitespace around = and between attributes, newlines included, and before /> or >', () => {
    const { commands, errors } = parse('<tf-copy\n  id = "1"\n\tpath=\'a b\'   dest="c"\n/>');
    expect(errors).toEqual([]);
    expect(commands).toEqual([{ id: '1', tool: 'copy', path: 'a b', dest: 'c', need_result: false }]);
    expect(parse('<tf-mkdir id="1" path="x"/>').commands).toHaveLength(1);
    expect(parse('<tf-mkdir id="1" path="x" ></tf-mkdir>').commands).toHaveLength(1);
  });

  it('decodes only the five named entities in attribute values', () => {
    const { commands } = parse('<tf-bash id="1" cmd="a &quot;b&quot; &apos;c&apos; &lt;&gt; &amp;amp; &#39; &nbsp; &"/>');
    expect(commands[0]!.cmd).toBe(`a "b" 'c' <> &amp; &#39; &nbsp; &`);
  });

  it('treats upper-case tag names as text', () => {
    const { commands, errors, visible } = parse('<TF-WRITE id="1" path="a">x</TF-WRITE>');
    expect(commands).toEqual([]);
    expect(errors).toEqual([]);
    expect(visible).toBe('<TF-WRITE id="1" path="a">x</TF-WRITE>');
  });

  it('treats <tf- without a name as text', () => {
    for (const doc of ['<tf- id="1">', '<tf-1 x>', '<tf-', '<tf-Write id="1"/>', '< tf-write>']) {
      const r = parse(doc);
      expect(r.outputs, doc).toEqual([]);
      expect(r.visible, doc).toBe(doc);
    }
  });

  it('recognises legacy bare names only behind the switch', () => {
    const doc = 'a <write id="1" path="x">\nhi</write> <mkdir id="2" path="d"/> <writer>';
    const off = parse(doc);
    expect(off.outputs).toEqual([]);
    expect(off.visible).toBe(doc);
    const on = parse(doc, { legacyTags: true });
    expect(on.errors).toEqual([]);
    expect(on.commands.map((c) => [c.tool, c.id])).toEqual([['write', '1'], ['mkdir', '2']]);
    expect(on.commands[0]!.content).toBe('hi');
    expect(on.visible).toBe('a   <writer>');
  });

  it('keeps ids as written', () => {
    expect(parse('<tf-touch id="007" path="a"/>').commands[0]!.id).toBe('007');
  });
});

describe('tools and attributes (§2)', () => {
  it('parses all eight tools', () => {
    const doc = [
      '<tf-write id="1" path="w">W</tf-write>',
      '<tf-append id="2" path="a">A</tf-append>',
      '<tf-mkdir id="3" path="m"/>',
      '<tf-touch id="4" path="t"/>',
      '<tf-copy id="5" path="c" dest="d"/>',
      '<tf-edit id="6" path="e"><old>o</old><new>n</new></tf-edit>',
      '<tf-read id="7" path="r"/>',
      '<tf-bash id="8" cmd="ls -la" timeout="30" need_result="true"/>',
    ].join('\n');
    const { commands, errors } = parse(doc);
    expect(errors).toEqual([]);
    expect(commands).toEqual([
      { id: '1', tool: 'write', path: 'w', content: 'W', need_result: false },
      { id: '2', tool: 'append', path: 'a', content: 'A', need_result: false },
      { id: '3', tool: 'mkdir', path: 'm', need_result: false },
      { id: '4', tool: 'touch', path: 't', need_result: false },
      { id: '5', tool: 'copy', path: 'c', dest: 'd', need_result: false },
      { id: '6', tool: 'edit', path: 'e', old_text: 'o', new_text: 'n', need_result: false },
      { id: '7', tool: 'read', path: 'r', need_result: true },
      { id: '8', tool: 'bash', cmd: 'ls -la', timeout: 30, need_result: true },
    ]);
  });

  it('read is always need_result, even when told false', () => {
    expect(parse('<tf-read id="1" path="r" need_result="false"/>').commands[0]!.need_result).toBe(true);
  });

  it('keeps allow_empty for the executor', () => {
    expect(parse('<tf-write id="1" path="a" allow_empty="true"></tf-write>').commands[0]).toEqual({
      id: '1', tool: 'write', path: 'a', content: '', need_result: false, allow_empty: true,
    });
  });

  it('empty write and append bodies are commands (they fail later, when executed)', () => {
    const { commands, errors } = parse('<tf-write id="1" path="a"></tf-write><tf-append id="2" path="b"/><tf-write id="3" path="c"/>');
    expect(errors).toEqual([]);
    expect(commands.map((c) => c.content)).toEqual(['', '', '']);
  });

  it.each([
    ['unknown attribute', '<tf-write id="1" path="a" mode="x">b</tf-write>'],
    ['attribute another tool takes', '<tf-mkdir id="1" path="a" dest="b"/>'],
    ['timeout on write', '<tf-write id="1" path="a" timeout="3">b</tf-write>'],
    ['allow_empty on append', '<tf-append id="1" path="a" allow_empty="true">b</tf-append>'],
    ['repeated attribute', '<tf-mkdir id="1" path="a" path="b"/>'],
    ['bad boolean', '<tf-mkdir id="1" path="a" need_result="yes"/>'],
    ['timeout zero', '<tf-bash id="1" cmd="ls" timeout="0"/>'],
    ['timeout fractional', '<tf-bash id="1" cmd="ls" timeout="1.5"/>'],
    ['timeout negative', '<tf-bash id="1" cmd="ls" timeout="-1"/>'],
    ['unquoted value', '<tf-mkdir id="1" path=a/>'],
    ['attribute without value', '<tf-mkdir id="1" path="a" need_result/>'],
    ['upper-case attribute name', '<tf-mkdir id="1" PATH="a"/>'],
    ['junk in the opening tag', '<tf-mkdir id="1" path="a" ;/>'],
    ['stray slash', '<tf-mkdir id="1" / path="a"/>'],
  ])('bad_attribute: %s', (_name, doc) => {
    const { errors, commands } = parse(doc);
    expect(commands).toEqual([]);
    expect(errors.map((e) => e.code)).toEqual(['bad_attribute']);
    expect(errors[0]!.id).toBe('1');
  });

  it('tools without a body accept a whitespace body and refuse text', () => {
    expect(codes('<tf-mkdir id="1" path="a">\n  \t\r\n</tf-mkdir>')).toEqual([]);
    expect(codes('<tf-mkdir id="1" path="a">x</tf-mkdir>')).toEqual(['unexpected_body']);
    expect(codes('<tf-bash id="1" cmd="ls">echo</tf-bash>')).toEqual(['unexpected_body']);
  });
});

describe('edit bodies (§2, §7)', () => {
  it('applies the one-line-break rule inside <old> and <new>', () => {
    const { commands } = parse('<tf-edit id="1" path="a">\n<old>\nx\n</old>\n<new>\r\ny\n</new>\n</tf-edit>');
    expect(commands[0]).toMatchObject({ old_text: 'x\n', new_text: 'y\n' });
  });

  it('allows an empty <new>', () => {
    expect(parse('<tf-edit id="1" path="a"><old>x</old><new></new></tf-edit>').commands[0]!.new_text).toBe('');
  });

  it('keeps raw text inside the parts, tags included', () => {
    const { commands } = parse('<tf-edit id="1" path="a"><old><new>a</ol</old><new><old></new></tf-edit>');
    expect(commands[0]).toMatchObject({ old_text: '<new>a</ol', new_text: '<old>' });
  });

  it.each([
    ['self-closing', '<tf-edit id="1" path="a"/>'],
    ['empty body', '<tf-edit id="1" path="a"></tf-edit>'],
    ['missing new', '<tf-edit id="1" path="a"><old>x</old></tf-edit>'],
    ['missing old', '<tf-edit id="1" path="a"><new>x</new></tf-edit>'],
    ['reversed', '<tf-edit id="1" path="a"><new>y</new><old>x</old></tf-edit>'],
    ['second old', '<tf-edit id="1" path="a"><old>x</old><new>y</new><old>z</old></tf-edit>'],
    ['text before', '<tf-edit id="1" path="a">so <old>x</old><new>y</new></tf-edit>'],
    ['text between', '<tf-edit id="1" path="a"><old>x</old> and <new>y</new></tf-edit>'],
    ['text after', '<tf-edit id="1" path="a"><old>x</old><new>y</new>.</tf-edit>'],
    ['empty old', '<tf-edit id="1" path="a"><old></old><new>y</new></tf-edit>'],
    ['old that is only the dropped break', '<tf-edit id="1" path="a"><old>\n</old><new>y</new></tf-edit>'],
    ['unclosed old', '<tf-edit id="1" path="a"><old>x<new>y</new></tf-edit>'],
    ['attributes on old', '<tf-edit id="1" path="a"><old a="1">x</old><new>y</new></tf-edit>'],
  ])('bad_edit: %s', (_name, doc) => {
    expect(codes(doc)).toEqual(['bad_edit']);
  });
});
