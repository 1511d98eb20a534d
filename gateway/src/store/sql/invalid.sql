-- Raises invalid_parameter_value with a message that names the field.
create or replace function taskq.invalid(field text, rule text) returns void language plpgsql as $$
begin
  raise exception using errcode = '22023', message = field || ' ' || rule;
end $$;
