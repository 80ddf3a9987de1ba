"""The Activity section (``/activity/``): what the curfew did, in words and a chart.

One module a concern: ``query`` reads the filters, ``chart`` draws the ledger,
``totals`` says the period in time and money, ``export`` streams the CSV,
``prices`` is the price table's form, ``words`` names the ledger's codes, and
``views`` are the doors.
"""
