// Builds layers from inline YAML so each table row states its whole policy.
import type { Command, ToolName } from '../../../services/protocol/index.ts';
import { parsePolicyDocument, PolicyLayers, type PolicyFile } from '../../../services/policy/index.ts';

export type LayerTexts = { global?: string[]; project?: string[]; session?: string[] };

export function layersFrom(t: LayerTexts): PolicyLayers {
  const files = (layer: 'global' | 'project' | 'session', texts: string[] = []): PolicyFile[] =>
    texts.map((text, k) => parsePolicyDocument(`${layer}-${k}.yaml`, text, layer));
  return new PolicyLayers(files('global', t.global), files('project', t.project), files('session', t.session));
}

export function bash(cmd: string): Command {
  return { id: '1', tool: 'bash', cmd, need_result: false };
}

export function file(tool: Exclude<ToolName, 'bash'>, path: string, dest?: string): Command {
  const c: Command = { id: '1', tool, path, need_result: false };
  if (dest !== undefined) c.dest = dest;
  return c;
}
