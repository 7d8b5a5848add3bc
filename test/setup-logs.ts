import { createLogger, setLogger } from '../services/log/index.ts';

// The suite starts many services in this process; their info lines and the
// dev-mode warnings of each start would bury the test report. Errors still
// show (THINKFLOW_TEST_LOG_LEVEL changes it). Tests that check log lines set
// their own logger; child processes the tests spawn keep their own level.
setLogger(createLogger({ level: (process.env.THINKFLOW_TEST_LOG_LEVEL as 'warn' | 'error' | undefined) ?? 'error', pretty: false }));
