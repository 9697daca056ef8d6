SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND ((executionarn = 'arn:aws:states:us-east-1:1:execution:sm:run-1' OR regexp_extract(executionarn, '[^:/]*$') = 'arn:aws:states:us-east-1:1:execution:sm:run-1') OR (executionarn IS NULL AND strpos(body, 'run-1') > 0))
ORDER BY eventdate, "$path"
