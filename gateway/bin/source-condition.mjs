// Module resolve hook: adds the "taskq-source" export condition, under which the workspace packages
// resolve to their TypeScript sources (see bin/taskq.mjs).
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, { ...context, conditions: [...context.conditions, "taskq-source"] });
}
