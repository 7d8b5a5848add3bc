import { createLogger, setLogger } from '../services/log/index.ts';

// The suite starts many services in this process; their info lines would
// bury the test report. Warnings and errors still show (THINKFLOW_TEST_LOG_LEVEL
// changes it). Child processes the tests spawn keep their own level.
setLogger(createLogger({ level: (process.env.THINKFLOW_TEST_LOG_LEVEL as 'warn' | undefined) ?? 'warn', pretty: false }));
