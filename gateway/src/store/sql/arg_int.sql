-- The gateway's queries pass numbers to the verbs through arg_int and arg_bigint, which refuse what
-- does not fit with invalid_parameter_value naming the field: a plain ::int cast raised
-- numeric_value_out_of_range (22003), which callers saw as an internal error.
create or replace function taskq.arg_int(field text, v numeric) returns integer language plpgsql immutable as $$
begin
  if v is null then return null; end if;
  if v = 'NaN'::numeric or v < -2147483648 or v > 2147483647 or v <> trunc(v) then
    perform taskq.invalid(field, format('must be a whole number in its range (got %s)', v));
  end if;
  return v::integer;
end $$;
