import type { Command } from '../protocol/index.ts';
import {
  checkDialAddress, decideApproval, evaluate, evaluateNetwork, evaluateSeededFile, explainBash, grantOptions, loadPolicyDir, looseningIn, parsePolicyDocument,
  type ApprovalAction, type BashExplanation, type DialCheck, type Evaluation, type Grant, type GrantOptions, type NetworkGrant, type NetworkTarget, type PolicyFile,
} from '../policy/index.ts';
import type { SessionMeta } from './sessions.ts';

// The pipeline's view of the policy engine. Evaluations are made in-process
// (API at enqueue, worker again at execution with the grants of that moment),
// never deserialized, because an Evaluation may carry details only its
// producer holds.


export interface PolicyGate {
  evaluate(session: SessionMeta, command: Command, grants: Grant[]): Evaluation;
  /** A seeded or uploaded file's path, judged as a write by the rules that apply to seeded files (POLICY.md `applies_to`). */
  evaluateSeeded(session: SessionMeta, path: string): Evaluation;
  decide(evaluation: Evaluation, session: SessionMeta, command: Command, grants: Grant[]): ApprovalAction;
  /** What `approve_for_session` may grant: exact always, a rule prefix when §7 allows it. */
  grantOptions(command: Command, evaluation: Evaluation): GrantOptions;
  /** A connection the session's egress proxy was asked for (POLICY.md §8); a network grant turns a prompt into allow. */
  evaluateNetwork(session: SessionMeta, target: NetworkTarget, grants: readonly NetworkGrant[]): Evaluation;
  /** The address the proxy is about to dial: loopback, private, link-local and metadata only when a global rule names it. */
  checkDial(session: SessionMeta, address: string, port: number): DialCheck;
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
    // A job on an existing session may bring its own policy: cached per (session, job).
    const key = `${session.session_id}\0${session.job_id ?? ''}`;
    let files = this.#sessionFiles.get(key);
    if (!files) {
      files = [parsePolicyDocument('session', session.policy, 'session')];
      if (this.#sessionFiles.size > 10_000) this.#sessionFiles.clear();
      this.#sessionFiles.set(key, files);
    }
    return files;
  }

  evaluate(session: SessionMeta, command: Command, grants: Grant[]): Evaluation {
    const layers = this.#store.layers(session.project ?? undefined, this.#sessionLayer(session));
    return evaluate(layers, command, grants);
  }

  evaluateSeeded(session: SessionMeta, path: string): Evaluation {
    return evaluateSeededFile(this.#store.layers(session.project ?? undefined, this.#sessionLayer(session)), path);
  }

  decide(evaluation: Evaluation, session: SessionMeta, command: Command, grants: Grant[]): ApprovalAction {
    return decideApproval(evaluation, session.approval, command, grants);
  }

  grantOptions(command: Command, evaluation: Evaluation): GrantOptions {
    return grantOptions(command, evaluation);
  }

  evaluateNetwork(session: SessionMeta, target: NetworkTarget, grants: readonly NetworkGrant[]): Evaluation {
    return evaluateNetwork(this.#store.layers(session.project ?? undefined, this.#sessionLayer(session)), target, grants);
  }

  checkDial(session: SessionMeta, address: string, port: number): DialCheck {
    return checkDialAddress(this.#store.layers(session.project ?? undefined, this.#sessionLayer(session)), address, port);
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
