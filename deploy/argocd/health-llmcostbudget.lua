-- Argo CD health check for LLMCostBudget (llmbudget.dev/v1alpha1).
--
--   Progressing  no status yet, or the current generation is not evaluated yet
--                (the Ready condition's observedGeneration is behind metadata.generation),
--                or Ready is not True yet
--   Degraded     the budget is OverBudget, or Unknown (spend unreadable or spec invalid)
--   Healthy      Ready is True and the budget is UnderBudget or Warning
--
-- Install it as resource.customizations.health.llmbudget.dev_LLMCostBudget in argocd-cm
-- (argocd-cm-patch.yaml beside this file carries the same text).
local hs = { status = "Progressing", message = "Waiting for llmbudget to evaluate the budget" }

if obj.status == nil then
  return hs
end

local ready = nil
if obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    end
  end
end

-- Metacontroller also writes status.observedGeneration; the Ready condition's is llmbudget's own.
local observed = nil
if ready ~= nil and ready.observedGeneration ~= nil then
  observed = ready.observedGeneration
else
  observed = obj.status.observedGeneration
end
local generation = obj.metadata.generation
if generation ~= nil and (observed == nil or observed < generation) then
  hs.message = "Waiting for generation " .. tostring(generation) .. " to be evaluated"
  return hs
end

local function conditionMessage(conditionType)
  if obj.status.conditions ~= nil then
    for _, condition in ipairs(obj.status.conditions) do
      if condition.type == conditionType and condition.message ~= nil and condition.message ~= "" then
        return condition.message
      end
    end
  end
  return nil
end

local state = obj.status.state
if state == "OverBudget" then
  hs.status = "Degraded"
  hs.message = "OverBudget: " .. (conditionMessage("OverBudget") or "a limit is reached")
  local blocking = conditionMessage("Blocking")
  if obj.status.enforcement ~= nil and obj.status.enforcement.blocking == true and blocking ~= nil then
    hs.message = hs.message .. "; " .. blocking
  end
  return hs
end
if state == "Unknown" then
  hs.status = "Degraded"
  hs.message = "Unknown: " .. (conditionMessage("BudgetEvaluated") or "spend could not be read")
  return hs
end

if ready == nil or ready.status ~= "True" then
  hs.message = (ready ~= nil and ready.message) or "Waiting for the Ready condition"
  return hs
end

if state == "UnderBudget" or state == "Warning" then
  hs.status = "Healthy"
  local used = ""
  if obj.status.percentUsed ~= nil then
    used = ": " .. tostring(obj.status.percentUsed) .. "% of the limit used"
  end
  hs.message = state .. used
  return hs
end

hs.message = "Unrecognised state " .. tostring(state)
return hs
