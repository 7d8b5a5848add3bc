import type { Command } from '../protocol/index.ts';
import {
  decideApproval, evaluate, explainBash, grantOptions, loadPolicyDir, looseningIn, parsePolicyDocument,
  type ApprovalAction, type BashExplanation, type Evaluation, type Grant, type GrantOptions, type PolicyFile,
} from '../policy/index.ts';
import type { SessionMeta } from './sessions.ts';

// The pipeline's view of the policy engine. Evaluations are made in-process
// (API at enqueue, worker again at execution with the grants of that moment),
// never deserialized, because an Evaluation may carry details only its
// producer holds.


export interface PolicyGate {
  evaluate(session: SessionMeta, command: Command, grants: Grant[]): Evaluation;
  decide(evaluation: Evaluation, session: SessionMeta, command: Command, grants: Grant[]): ApprovalAction;
  /** What `approve_for_session` may grant: exact always, a rule prefix when §7 allows it. */
  grantOptions(command: Command, evaluation: Evaluation): GrantOptions;
  /** A bash script's simple commands, each with its own decision and rules (for people deciding). */
  explainBash(session: SessionMeta, cmd: string, grants: Grant[]): BashExplanation;
  /**
   * Throws PolicyLoadError (code `invalid_policy`) for a bad session policy or an unknown project;
   * with `tightenOnly` (a submitter's policy), PolicyLoosensError for an allow rule or a looser default.
   */
  validateSession(project: string | null, policy: unknown, tightenOnly?: boolean): void;
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

  grantOptions(command: Command, evaluation: Evaluation): GrantOptions {
    return grantOptions(command, evaluation);
  }

  explainBash(session: SessionMeta, cmd: string, grants: Grant[]): BashExplanation {
    return explainBash(this.#store.layers(session.project ?? undefined, this.#sessionLayer(session)), cmd, grants);
  }

  validateSession(project: string | null, policy: unknown, tightenOnly = false): void {
    const files = policy === null || policy === undefined ? [] : [parsePolicyDocument('session', policy, 'session')];
    const operator = this.#store.layers(project ?? undefined);
    if (tightenOnly) for (const f of files) looseningIn(f, operator);
  }
}
