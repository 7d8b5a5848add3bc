import type { Command } from '../protocol/command.ts';
import {
  decideApproval, evaluate, explainBash, grantFor, loadPolicyDir, parsePolicyDocument,
  type BashExplanation, type Evaluation, type Grant, type PolicyFile,
} from '../policy/index.ts';
import type { SessionMeta } from './sessions.ts';

// The pipeline's view of the policy engine. Evaluations are made in-process
// (API at enqueue, worker again at execution with the grants of that moment),
// never deserialized, because an Evaluation may carry details only its
// producer holds.

export type { BashExplanation, Evaluation, Grant };
export type ApprovalAction = { action: 'run' | 'ask' | 'refuse'; reason?: string };

export interface PolicyGate {
  evaluate(session: SessionMeta, command: Command, grants: Grant[]): Evaluation;
  decide(evaluation: Evaluation, session: SessionMeta, command: Command, grants: Grant[]): ApprovalAction;
  grantFor(command: Command, evaluation: Evaluation): Grant;
  /** A bash script's simple commands, each with its own decision and rules (for people deciding). */
  explainBash(session: SessionMeta, cmd: string, grants: Grant[]): BashExplanation;
  /** Throws PolicyLoadError (code `invalid_policy`) for a bad session policy or an unknown project. */
  validateSession(project: string | null, policy: unknown): void;
}

type Store = Awaited<ReturnType<typeof loadPolicyDir>>;

export class FilePolicyGate implements PolicyGate {
  readonly #store: Store;
  readonly #sessionFiles = new Map<string, PolicyFile[]>();

  constructor(store: Store) {
    this.#store = store;
  }

  /** @example const gate = await FilePolicyGate.load('./policies'); */
  static async load(dir: string): Promise<FilePolicyGate> {
    return new FilePolicyGate(await loadPolicyDir(dir));
  }

  #sessionLayer(session: SessionMeta): PolicyFile[] {
    if (session.policy === null || session.policy === undefined) return [];
    let files = this.#sessionFiles.get(session.session_id);
    if (!files) {
      files = [parsePolicyDocument('session', session.policy, 'session')];
      if (this.#sessionFiles.size > 10_000) this.#sessionFiles.clear();
      this.#sessionFiles.set(session.session_id, files);
    }
    return files;
  }

  evaluate(session: SessionMeta, command: Command, grants: Grant[]): Evaluation {
    const layers = this.#store.layers(session.project ?? undefined, this.#sessionLayer(session));
    return evaluate(layers, command, grants);
  }

  decide(evaluation: Evaluation, session: SessionMeta, command: Command, grants: Grant[]): ApprovalAction {
    return decideApproval(evaluation, session.approval, command, grants);
  }

  grantFor(command: Command, evaluation: Evaluation): Grant {
    return grantFor(command, evaluation);
  }

  explainBash(session: SessionMeta, cmd: string, grants: Grant[]): BashExplanation {
    return explainBash(this.#store.layers(session.project ?? undefined, this.#sessionLayer(session)), cmd, grants);
  }

  validateSession(project: string | null, policy: unknown): void {
    const files = policy === null || policy === undefined ? [] : [parsePolicyDocument('session', policy, 'session')];
    this.#store.layers(project ?? undefined, files);
  }
}
