// Commands that create or rewrite each operand in place.
import type { Descriptor } from './descriptor.ts';
import { optionSpec, values } from './options.ts';

const everyOperand: Descriptor['targets'] = (p, sink) => { for (const w of p.operands) sink.write(w, 'self'); };

export const mkdir: Descriptor = {
  programs: ['mkdir'],
  options: optionSpec({ flag: ['-p', '--parents', '-v', '--verbose', '-Z', '--help', '--version'], value: ['-m', '--mode'], optional: ['--context'] }),
  targets: everyOperand,
  examples: [['mkdir -p src/lib .git/hooks', ['self:src/lib', 'self:.git/hooks']], ['mkdir -m 700 x', ['self:x']]],
};

export const touch: Descriptor = {
  programs: ['touch'],
  options: optionSpec({
    flag: ['-a', '-c', '--no-create', '-f', '-h', '--no-dereference', '-m', '--help', '--version'],
    value: ['-d', '--date', '-r', '--reference', '-t', '--time'],
  }),
  targets: everyOperand,
  examples: [['touch -d yesterday .git/index.lock', ['self:.git/index.lock']], ['touch -r a b', ['self:b']]],
};

export const tee: Descriptor = {
  programs: ['tee'],
  options: optionSpec({ flag: ['-a', '--append', '-i', '--ignore-interrupts', '-p', '--help', '--version'], optional: ['--output-error'] }),
  targets: everyOperand,
  examples: [['tee -a .git/config', ['self:.git/config']], ['tee log.txt /dev/null', ['self:log.txt', 'self:/dev/null']]],
};

export const truncate: Descriptor = {
  programs: ['truncate', 'fallocate'],
  options: optionSpec({
    flag: ['-c', '--no-create', '-o', '--io-blocks', '-d', '--dig-holes', '-i', '--insert-range', '-n', '--keep-size', '-p', '--punch-hole', '-x', '--posix', '-z', '--zero-range', '-v', '--verbose'],
    value: ['-s', '--size', '-r', '--reference', '-l', '--length'],
  }),
  targets: everyOperand,
  examples: [['truncate -s 0 .git/index', ['self:.git/index']], ['fallocate -l 1G big', ['self:big']]],
};

export const chmod: Descriptor = {
  programs: ['chmod'],
  // `chmod -x f`: a mode may look like an option, so options end at the mode.
  stopAtOperand: true,
  operand: /^-[rwxXst]+$|^-[0-7]+$/,
  options: optionSpec({
    flag: ['-R', '--recursive', '-c', '--changes', '-f', '--silent', '--quiet', '-v', '--verbose', '--no-preserve-root', '--preserve-root', '--help', '--version'],
    value: ['--reference'],
  }),
  targets: (p, sink) => attributeTargets(p, sink, values(p, '--reference').length > 0),
  examples: [
    ['chmod +x .git/hooks/pre-commit', ['self:.git/hooks/pre-commit']],
    ['chmod -R 777 .', ['tree:.']],
    ['chmod --reference=a b', ['self:b']],
    ['chmod -x run.sh', ['self:run.sh']],
    ['chmod 755 -R .git', 'complex'],
  ],
};

export const chown: Descriptor = {
  programs: ['chown', 'chgrp'],
  stopAtOperand: true,
  options: optionSpec({
    flag: ['-R', '--recursive', '-c', '--changes', '-f', '--silent', '--quiet', '-v', '--verbose', '-h', '--no-dereference', '--dereference',
      '-H', '-L', '-P', '--no-preserve-root', '--preserve-root', '--help', '--version'],
    value: ['--reference', '--from'],
  }),
  targets: (p, sink) => attributeTargets(p, sink, values(p, '--reference').length > 0),
  examples: [['chown -R 1000:1000 .git', ['tree:.git']], ['chgrp users a b', ['self:a', 'self:b']]],
};

/** chmod/chown: the first operand is the mode or owner unless `--reference` gives it; the rest are files. */
function attributeTargets(p: Parameters<Descriptor['targets']>[0], sink: Parameters<Descriptor['targets']>[1], reference: boolean): void {
  const recursive = p.opts.has('-R') || p.opts.has('--recursive');
  const files = p.operands.slice(reference ? 0 : 1);
  // GNU reads options after the mode too (`chmod 755 -R d`): not this reading.
  if (files.some((w) => w.text.startsWith('-') && w.text.length > 1)) sink.unknown('an option after the mode');
  for (const w of files) sink.write(w, recursive ? 'tree' : 'self');
}
