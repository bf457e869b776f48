"""The program a confinement layer starts: one action, one structured result on stdout.

Standard library only, so it runs on the system interpreter under /usr with nothing else
mounted. A refusal is reported as data (the errno of the one operation performed); anything
else raises, exits non-zero and leaves no result line, so a crash never reads as a denial.
"""
