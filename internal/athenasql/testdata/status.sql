SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND (upper(status) = 'FAILED' OR status IS NULL OR (status IS NULL OR status = ''))
ORDER BY eventdate, "$path"
