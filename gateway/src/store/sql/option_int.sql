-- A whole-number option of a job (taskq.enqueue_jobs): null when absent or JSON null; from lo to hi
-- otherwise, or invalid_parameter_value naming the field, with the RPC's wording (rpc/validate.ts).
create or replace function taskq.option_int(field text, v jsonb, lo bigint, hi bigint) returns bigint
language plpgsql immutable as $$
declare
  n numeric;
begin
  if v is null or v = 'null'::jsonb then return null; end if;
  if jsonb_typeof(v) <> 'number' then
    perform taskq.invalid(field, format('must be a whole number (got a JSON %s)', jsonb_typeof(v)));
  end if;
  n := v::numeric;
  if n <> trunc(n) or n < lo or n > hi then
    perform taskq.invalid(field, format('must be from %s to %s (got %s)', lo, hi, n));
  end if;
  return n::bigint;
end $$;
