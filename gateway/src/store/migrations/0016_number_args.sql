-- taskq schema, version 16: numbers reach the verbs through arg_int / arg_bigint, which refuse what
-- does not fit (invalid_parameter_value naming the field) where a plain ::int cast raised
-- numeric_value_out_of_range (22003), which callers saw as an internal error.

create function taskq.arg_int(field text, v numeric) returns integer language plpgsql immutable as $$
begin
  if v is null then return null; end if;
  if v = 'NaN'::numeric or v < -2147483648 or v > 2147483647 or v <> trunc(v) then
    perform taskq.invalid(field, format('must be a whole number in its range (got %s)', v));
  end if;
  return v::integer;
end $$;

create function taskq.arg_bigint(field text, v numeric) returns bigint language plpgsql immutable as $$
begin
  if v is null then return null; end if;
  if v = 'NaN'::numeric or v < -9223372036854775808 or v > 9223372036854775807 or v <> trunc(v) then
    perform taskq.invalid(field, format('must be a whole number in its range (got %s)', v));
  end if;
  return v::bigint;
end $$;
