// One validator round of a job: when the model ends, `validate.cmd` runs as a
// command of its own turn, through the same policy, approvals, queue, sandbox
// and ledger as any other (ledger flow `validator`), between the events
// validation_started and validation_finished. What it means is validator.ts's.
import type { JobEmit, LedgerRecord, Pipeline } from '../pipeline/index.ts';
import type { JobState, JobValidate } from './job-state.ts';
import { judgeValidation, validatorCommand, type ValidationVerdict } from './validator.ts';

/** The part of the pipeline a validator round uses. */
export type ValidationPipeline = Pick<Pipeline, 'nextTurn' | 'enqueue' | 'awaitResult'>;

export class JobValidation {
  readonly #spec: JobValidate;
  readonly #view: JobState;

  constructor(spec: JobValidate, view: JobState) {
    this.#spec = spec;
    this.#view = view;
    view.validation ??= { rounds: 0, passed: null };
  }

  /** Runs the next round and records it in the view; `signal` aborts the wait (cancel, timeout). */
  async round(deps: { pipeline: ValidationPipeline; emit: JobEmit }, signal: AbortSignal): Promise<ValidationVerdict> {
    const progress = this.#view.validation!;
    const round = progress.rounds + 1;
    const max = this.#spec.max_rounds;
    const command = validatorCommand(this.#spec, round);
    // Its own turn: the model's turn is drained, and a failing validator must not mark that turn failed.
    const turn = await deps.pipeline.nextTurn(this.#view.session_id);
    await deps.emit({ type: 'validation_started', round, max_rounds: max, command_id: command.id, cmd: this.#spec.cmd });
    const handle = await deps.pipeline.enqueue(this.#view.session_id, turn, command, 'validator');
    const record: LedgerRecord = await deps.pipeline.awaitResult(handle, signal);
    progress.rounds = round;
    progress.passed = record.status === 'succeeded';
    await deps.emit({
      type: 'validation_finished', round, max_rounds: max, command_id: command.id,
      passed: progress.passed, status: record.status, exit_code: record.exit_code, error: record.error,
    });
    return judgeValidation(record, round, max);
  }
}
