-- A string option of a job (taskq.enqueue_jobs): null when absent or JSON null; at most max_bytes bytes
-- otherwise, or invalid_parameter_value naming the field, with the RPC's wording (rpc/validate.ts). A
-- jsonb string cannot hold NUL, which the RPC also refuses.
create or replace function taskq.option_text(field text, v jsonb, max_bytes integer) returns text
language plpgsql immutable as $$
declare
  s text;
begin
  if v is null or v = 'null'::jsonb then return null; end if;
  if jsonb_typeof(v) <> 'string' then
    perform taskq.invalid(field, format('must be a string (got a JSON %s)', jsonb_typeof(v)));
  end if;
  s := v #>> '{}';
  if octet_length(s) > max_bytes then
    perform taskq.invalid(field, format('must be at most %s bytes (got %s)', max_bytes, octet_length(s)));
  end if;
  return s;
end $$;
