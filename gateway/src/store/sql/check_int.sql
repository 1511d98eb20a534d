-- v when it is null or from lo to hi; invalid_parameter_value naming the field otherwise.
create or replace function taskq.check_int(field text, v bigint, lo bigint, hi bigint) returns integer
language plpgsql immutable as $$
begin
  if v is not null and (v < lo or v > hi) then
    perform taskq.invalid(field, format('must be from %s to %s (got %s)', lo, hi, v));
  end if;
  return v;
end $$;
