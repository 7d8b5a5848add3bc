// Building blocks for property and fuzz tests: pieces of protocol, inert text
// and junk that, glued together, reach every state of the parser.
export const FRAGMENTS: readonly string[] = [
  '<tf-write id="1" path="a.txt">\nhello\n</tf-write>',
  '<tf-write id="2" path="b" allow_empty="true"></tf-write>',
  '<tf-append id="3" path="a.txt">more é€😀</tf-append>',
  '<tf-mkdir id="4" path="src/x"/>',
  "<tf-touch id='5' path='t' need_result='true' />",
  '<tf-copy id="6" path="a" dest="b"/>',
  '<tf-edit id="7" path="a">\n<old>\nx\n</old>\n<new>y</new>\n</tf-edit>',
  '<tf-read id="8" path="r"/>',
  '<tf-bash id="9" cmd="ls &amp;&amp; echo &quot;hi&quot;" timeout="5"/>',
  '<tf-bash id="10" cmd="x">\n</tf-bash>',
  '<tf-nope id="11">junk</tf-nope>',
  '<tf-mkdir id="12" path=bad/>',
  '<tf-mkdir id="x" path="a"/>',
  '<tf-edit id="13" path="a"><new>1</new><old>2</old></tf-edit>',
  '<write id="14" path="l">legacy</write>',
  '<tf-write id="15" path="u">',
  '</tf-write>',
  '```\n', '~~~~\n', '   ```js\n', '\t```\n', '`', '``', ' ` ', '\n', '\r\n', '  ',
  '<', '<t', '<tf', '<tf-', '<tf-w', '/>', '>', '"', "'", '=', '&amp;', '&#39;',
  'plain text ', 'é', '€', '😀', '中文', 'a < b > c',
];

/** A small seeded PRNG (mulberry32) so failures can be replayed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = '<>/="\'`~-tf \n\rabcdeiklmnoprstuwx&;é😀';

/** A document glued from fragments, then mutated a few times. */
export function randomDocument(next: () => number, maxFragments = 12): string {
  const pick = (n: number) => Math.floor(next() * n);
  let doc = '';
  const count = 1 + pick(maxFragments);
  for (let i = 0; i < count; i++) doc += FRAGMENTS[pick(FRAGMENTS.length)];
  const mutations = pick(4);
  for (let m = 0; m < mutations && doc.length > 0; m++) {
    const at = pick(doc.length);
    const ch = ALPHABET[pick(ALPHABET.length)]!;
    const kind = pick(3);
    if (kind === 0) doc = doc.slice(0, at) + ch + doc.slice(at);
    else if (kind === 1) doc = doc.slice(0, at) + doc.slice(at + 1);
    else doc = doc.slice(0, at) + ch + doc.slice(at + 1);
  }
  return doc;
}
