import type { EventBody, JobEvent } from '../pipeline/index.ts';

// The events the job loop produces (API.md, events) are the event log's runner
// events (pipeline/events.ts), minus what the log adds (seq, ids, time) and
// minus job_finished, which jobs/ writes with the final view. The loop emits
// them through one injected sink; where they are stored is the caller's choice.

export type AgentEvent = EventBody<Exclude<JobEvent, { type: 'job_finished' }>>;

/** Where the loop's events go. A rejection (the store is down) fails the job as an infrastructure error. */
export type EmitFn = (event: AgentEvent) => Promise<unknown>;
