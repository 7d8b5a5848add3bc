// dd writes `of=FILE`; its operands are KEY=VALUE, and a key not listed is not understood.
import type { Descriptor } from './descriptor.ts';
import { optionSpec } from './options.ts';

const KEYS = new Set(['if', 'of', 'bs', 'ibs', 'obs', 'cbs', 'count', 'skip', 'seek', 'iseek', 'oseek', 'conv', 'iflag', 'oflag', 'status']);

export const dd: Descriptor = {
  programs: ['dd'],
  options: optionSpec({ flag: ['--help', '--version'] }),
  targets: (p, sink) => {
    for (const w of p.operands) {
      const eq = w.text.indexOf('=');
      const key = eq < 0 ? '' : w.text.slice(0, eq);
      if (!KEYS.has(key)) { sink.unknown(`operand '${w.text.slice(0, 40)}'`); return; }
      if (key === 'of') sink.write({ ...w, text: w.text.slice(eq + 1) }, 'self');
    }
  },
  examples: [['dd if=/dev/zero of=.git/index bs=1 count=1', ['self:.git/index']], ['dd if=a of=/dev/null', ['self:/dev/null']], ['dd foo=1', 'complex']],
};
