-- As arg_int, for bigint arguments.
create or replace function taskq.arg_bigint(field text, v numeric) returns bigint language plpgsql immutable as $$
begin
  if v is null then return null; end if;
  if v = 'NaN'::numeric or v < -9223372036854775808 or v > 9223372036854775807 or v <> trunc(v) then
    perform taskq.invalid(field, format('must be a whole number in its range (got %s)', v));
  end if;
  return v::bigint;
end $$;
