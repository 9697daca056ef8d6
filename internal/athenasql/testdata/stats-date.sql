SELECT eventdate AS value, count(*) AS objects
FROM "my_stack_glue_database"."my_stack_dla_glue_table"
WHERE eventdate BETWEEN '2024-03-10' AND '2024-03-15'
GROUP BY eventdate
ORDER BY eventdate
