SELECT "$path" AS path, eventdate
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
  AND ((statemachinearn = 'IngestGranule' OR regexp_extract(statemachinearn, '[^:/]*$') = 'IngestGranule') OR (statemachinearn IS NULL AND strpos(body, 'IngestGranule') > 0))
ORDER BY eventdate, "$path"
