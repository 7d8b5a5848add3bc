// Public surface of the Docker sandbox. See README.md for what it owns.
export { SandboxManager } from './sandbox-manager.ts';
export type { PauseListener } from './idle-pause.ts';
export { frozenNow, thawIfPaused } from './frozen-container.ts';
export type { PauseWith } from './frozen-container.ts';
export type { SandboxOptions } from './sandbox-options.ts';
export { DEFAULT_OUTPUT_CAP_BYTES, resolveSandboxOptions } from './sandbox-options.ts';
export type { ExecuteOptions, ExecutionResult, ExpectedResolution, Sandbox, ReadPathResult } from './types.ts';
export { toContainerSpec } from './container-spec.ts';
export { EGRESS_MOUNT, EGRESS_SOCKET_NAME } from './egress-dirs.ts';
export { containerName, volumeName, sessionSlug, LABEL_MANAGED, LABEL_SESSION } from './names.ts';
export { UploadError } from './workspace-upload.ts';
export type { UploadEntry, UploadOptions, UploadRefusal, UploadResult } from './workspace-upload.ts';
export type { BaselineInfo, ChangeKind, ChangeList, WorkspaceChange, WorkspaceFormat, WorkspaceOut } from './workspace-out.ts';
export { WorkspaceExecError } from './workspace-exec.ts';
export { EgressProxy, DEFAULT_EGRESS_LIMITS, resolveEgressLimits, defaultDialer, defaultResolver, egressAuthority } from './egress/index.ts';
export type {
  AddressCheck, DecideContext, Dialer, EgressDecision, EgressLimits, EgressProxyDeps, EgressTarget, EgressUsage, Resolver,
} from './egress/index.ts';
export { SandboxPreviews, PreviewRefused } from './preview.ts';
export type { PreviewChange, PreviewRun } from './preview.ts';
export type { PreviewOptions } from './preview-options.ts';
export type { PreviewRefusalCode } from './preview-copy.ts';
export { LABEL_PREVIEW, isPreviewId } from './names.ts';
