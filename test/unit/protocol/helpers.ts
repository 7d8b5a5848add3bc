import { TurnParser, type ParserOptions, type ParserOutput, type StreamName } from '../../../services/protocol/index.ts';

export function parse(doc: string, options: ParserOptions = {}) {
  const parser = new TurnParser(options);
  const outputs: ParserOutput[] = [...parser.feed('text', doc), ...parser.end()];
  return {
    outputs,
    commands: outputs.flatMap((o) => (o.type === 'command' ? [o.command] : [])),
    errors: outputs.flatMap((o) => (o.type === 'error' ? [o.error] : [])),
    visible: parser.visibleText(),
  };
}

export function codes(doc: string, options: ParserOptions = {}): string[] {
  return parse(doc, options).errors.map((e) => e.code);
}

/** Feeds deltas of several streams in order, each re-split into `size`-byte pieces (0 = whole). */
export function feedDeltas(deltas: Array<[StreamName, string]>, size: number, options: ParserOptions = {}) {
  const parser = new TurnParser(options);
  const outputs: ParserOutput[] = [];
  for (const [stream, delta] of deltas) {
    if (size === 0) {
      outputs.push(...parser.feed(stream, delta));
      continue;
    }
    const bytes = Buffer.from(delta, 'utf8');
    for (let at = 0; at < bytes.length; at += size) outputs.push(...parser.feed(stream, bytes.subarray(at, at + size)));
  }
  outputs.push(...parser.end());
  return { outputs, visible: parser.visibleText() };
}
