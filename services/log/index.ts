export { createLogger, log, setLogger, withIds, reasonOf, type Logger, type LogIds, type LogLevel } from './logger.ts';
