export { createLogger, log, setLogger, withIds, reasonOf, type Logger } from './logger.ts';
