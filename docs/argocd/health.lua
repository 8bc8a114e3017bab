-- Argo CD health check for an app kind's custom resources (docs/gitops.md says where it goes).
-- Reads the conditions the operator writes, as kstatus does: a status of an older generation, or
-- none yet, is Progressing; Stalled (a name taken, an image not allowed, an invalid spec, a rollout
-- past its progress deadline) is Degraded; Ready is Healthy; anything else is Progressing.
local hs = { status = "Progressing", message = "Waiting for the operator's first status" }
if obj.status == nil or obj.status.observedGeneration == nil then
  return hs
end
local generation = obj.metadata.generation or 0
if obj.status.observedGeneration ~= generation then
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end
local conditions = {}
for _, c in ipairs(obj.status.conditions or {}) do
  conditions[c.type] = c
end
local function says(c)
  return (c.reason or "") .. ": " .. (c.message or "")
end
if conditions.Stalled ~= nil and conditions.Stalled.status == "True" then
  return { status = "Degraded", message = says(conditions.Stalled) }
end
local ready = conditions.Ready
if ready ~= nil and ready.status == "True" then
  return { status = "Healthy", message = says(ready) }
end
if conditions.Reconciling ~= nil and conditions.Reconciling.status == "True" then
  return { status = "Progressing", message = says(conditions.Reconciling) }
end
if ready ~= nil then
  hs.message = says(ready)
end
return hs
