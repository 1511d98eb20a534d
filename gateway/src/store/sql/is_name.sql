-- The rule for queue and schedule names: 1 to 128 letters, digits, . _ -, starting with a letter or
-- digit. Never ':', so the audit log can file flow limits under "flow:<key>" and schedules under
-- "schedule:<name>". The length is checked apart from the pattern: as a bound ({0,127}) in it, the check
-- cost a name 2.4 us, against 0.2. Plain SQL, so a query that calls it has it inlined. Null for null.
create or replace function taskq.is_name(p_name text) returns boolean language sql immutable as $$
  select p_name ~ '^[A-Za-z0-9][A-Za-z0-9._-]*$' and length(p_name) <= 128
$$;
