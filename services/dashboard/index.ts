// Public surface of the operator dashboard. Re-exports only.
export { dashboardRoutes, type ToolCatalog } from './routes.ts';
