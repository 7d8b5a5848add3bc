// Public surface of the operator dashboard. Re-exports only.
export { dashboardRoutes } from './routes.ts';
