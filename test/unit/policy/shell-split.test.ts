import { describe, expect, it } from 'vitest';
import { splitScript } from '../../../services/policy/index.ts';

describe('splitScript: simple scripts', () => {
  it.each<[string, string[][]]>([
    ['ls', [['ls']]],
    ['git status && rm -rf /', [['git', 'status'], ['rm', '-rf', '/']]],
    ['a || b', [['a'], ['b']]],
    ['a; b', [['a'], ['b']]],
    ['a;b', [['a'], ['b']]],
    ['a | b', [['a'], ['b']]],
    ['a |& b', [['a'], ['b']]],
    ['a & b', [['a'], ['b']]],
    ['a &', [['a']]],
    ['a\nb', [['a'], ['b']]],
    ['a\n\n  b\n', [['a'], ['b']]],
    ['a &&\n  b', [['a'], ['b']]],
    ['a | \\\n b', [['a'], ['b']]],
    // quoting honoured: separators inside quotes are text
    ['git commit -m "fix: a && b; c | d"', [['git', 'commit', '-m', 'fix: a && b; c | d']]],
    ["echo 'a;b' \"c d\" e\\ f", [['echo', 'a;b', 'c d', 'e f']]],
    ["echo a'b'\"c\"", [['echo', 'abc']]],
    ['git "status"', [['git', 'status']]],
    ['echo "say \\"hi\\""', [['echo', 'say "hi"']]],
    // redirections allowed, stripped from argv
    ['ls > out.txt', [['ls']]],
    ['ls >> out.txt 2>&1', [['ls']]],
    ['ls 2>/dev/null', [['ls']]],
    ['sort < in > out', [['sort']]],
    ['make &> log', [['make']]],
    ['cmd 1>&2', [['cmd']]],
    ['echo 2 > x', [['echo', '2']]],
    ['ls >| f', [['ls']]],
    // expansion outside the command word is fine
    ['echo "$HOME/x" $USER ${A}', [['echo', '$HOME/x', '$USER', '${A}']]],
    ['ls *.ts', [['ls', '*.ts']]],
    ['echo a # comment && rm -rf /', [['echo', 'a']]],
    ['echo a#b', [['echo', 'a#b']]],
    ['"if" x', [['if', 'x']]],
    ['echo if then', [['echo', 'if', 'then']]],
    ['', []],
  ])('%j', (script, commands) => {
    const r = splitScript(script);
    expect(r.complex).toBeUndefined();
    expect(r.commands).toEqual(commands);
  });
});

describe('splitScript: complex scripts', () => {
  it.each<[string, RegExp, string[][]]>([
    ['(cd x; rm -rf /)', /subshell/, [['cd', 'x'], ['rm', '-rf', '/']]],
    ['{ ls; }', /compound command '\{'/, [['ls']]],
    ['if true; then curl x; fi', /compound command 'if'/, [['true'], ['curl', 'x']]],
    ['for f in *; do rm $f; done', /compound command 'for'/, [['rm', '$f']]],
    ['while read l; do echo $l; done < f', /compound command 'while'/, [['read', 'l'], ['echo', '$l']]],
    ['case $x in a) rm -rf /;; esac', /unbalanced \)/, [['rm', '-rf', '/']]],
    ['! ls', /compound command '!'/, [['ls']]],
    ['echo $(whoami)', /command substitution/, [['whoami'], ['echo', '']]],
    ['echo "a $(rm -rf /) b"', /command substitution/, [['rm', '-rf', '/'], ['echo', 'a ', ' b']]],
    ['echo `id`', /backquote/, [['id'], ['echo', '']]],
    ['diff <(ls a) b', /process substitution/, [['ls', 'a'], ['diff', 'b']]],
    ['cat <<EOF\nhello\nEOF', /here-document/, [['cat'], ['hello'], ['EOF']]],
    ['$CMD -rf /', /expansion in the command word/, [['$CMD', '-rf', '/']]],
    ['${X}ls', /expansion in the command word/, [['${X}ls']]],
    ['~/bin/tool', /expansion in the command word/, [['~/bin/tool']]],
    ['$(echo rm) -rf /', /command substitution/, [['echo', 'rm']]],
    ['{rm,-rf,/}', /braces/, [['{rm,-rf,/}']]],
    ['f() { rm -rf /; }', /subshell/, [['f'], ['rm', '-rf', '/']]],
    ['echo $((1+2))', /arithmetic/, [['echo', '$((1+2))']]],
    ["echo 'open", /unterminated quote/, [['echo', 'open']]],
    ['ls &&', /nothing after/, [['ls']]],
    ['; ls', /empty command/, [['ls']]],
    ['ls >', /redirection without a target/, [['ls']]],
    // POLICY.md §7: assignments are not the command, and they make it complex
    ['FOO=1 BAR="a b" ls -la', /leading variable assignment \(FOO=\)/, [['ls', '-la']]],
    ['X=1', /leading variable assignment/, []],
    ['LD_PRELOAD=/tmp/x.so ls', /leading variable assignment \(LD_PRELOAD=\)/, [['ls']]],
    ['GIT_DIR=/tmp/g git status', /leading variable assignment/, [['git', 'status']]],
    ["$'\\x63url' x", /ANSI-C quoting/, [['curl', 'x']]], // decoded for the rules
    ['echo $"hi"', /locale quoting/, [['echo', 'hi']]],
    ['export LD_PRELOAD=/tmp/x.so; ls', /environment change \(export LD_PRELOAD=\)/, [['export', 'LD_PRELOAD=/tmp/x.so'], ['ls']]],
    ['hash -p /tmp/evil ls; ls', /shell state change \(hash\)/, [['hash', '-p', '/tmp/evil', 'ls'], ['ls']]],
  ])('%j', (script, reason, commands) => {
    const r = splitScript(script);
    expect(r.complex).toMatch(reason);
    expect(r.commands).toEqual(commands);
  });
});

describe('splitScript: redirections and assignments are kept beside the argv', () => {
  it('records each redirection with its operator and target', () => {
    const r = splitScript('echo x >> .git/config 2>&1 < in.txt; > only.txt');
    expect(r.complex).toBeUndefined();
    expect(r.simple.map((c) => [c.argv, c.redirs.map((d) => [d.op, d.target.text])])).toEqual([
      [['echo', 'x'], [['>>', '.git/config'], ['2>&', '1'], ['<', 'in.txt']]],
      [[], [['>', 'only.txt']]],
    ]);
  });

  it('keeps the assignments of a complex script, and redirections of commands read out of it', () => {
    const r = splitScript('LD_PRELOAD=x.so cat a > b; (echo y >> .git/config)');
    expect(r.complex).toMatch(/subshell/);
    expect(r.simple.map((c) => [c.assigns, c.argv, c.redirs.map((d) => d.target.text)])).toEqual([
      [['LD_PRELOAD=x.so'], ['cat', 'a'], ['b']],
      [[], ['echo', 'y'], ['.git/config']],
    ]);
  });
});
